"""The local page of `worldmm serve` at `/`: a day's timeline, search, chat and span forget, over the same API.

Three files of the package (`worldmm/gateway/static`), served as they are: nothing is built or fetched at run
time. The Content-Security-Policy lets the page load only its own script and style and talk only to this
gateway, so even memory text that reached the DOM as markup could not run (the script sets it as text).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

PAGE_PREFIX = "/page/"
_ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True)
class PageAssets:
    """The page's files, read once from the package."""

    bodies: dict[str, bytes]

    @classmethod
    def load(cls) -> PageAssets:
        static = files("worldmm.gateway") / "static"
        return cls({name: (static / name).read_bytes() for name in _ASSETS})

    def response(self, name: str) -> Response:
        return Response(self.bodies[name], media_type=_ASSETS[name], headers=_HEADERS)


def page_routes(assets: PageAssets | None = None) -> list[Route]:
    """`GET /` (the page) and `GET /page/{name}` (its script and style); any other name is a JSON 404."""
    assets = assets or PageAssets.load()

    async def index(request: Request) -> Response:
        return assets.response("index.html")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "index.html" or name not in assets.bodies:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return assets.response(name)

    return [
        Route("/", index, methods=["GET"]),
        Route(PAGE_PREFIX + "{name}", asset, methods=["GET"]),
    ]
