"""The local gateway: API Gateway (HTTP API, JWT authorizer) and the S3 upload target, in one Starlette app.

Every route of `worldmm.gateway.routes` (the ones template.yaml declares) is matched as API Gateway matches
it, its Bearer token verified as the JWT authorizer would, and the request handed to the same
`lambda_handler` as the v2 event it receives in production. `POST /uploads/` takes the presigned uploads
(`worldmm.capture.local_uploads`), stores the object and records it as the bucket's ObjectCreated
notification would (S3 → SQS → `worldmm.capture.s3_events`), on a background worker. `/openapi.json` serves
the API's document, `/mcp` the MCP endpoint over the same memory, and `/` the local page
(`worldmm.gateway.page`).
"""

from __future__ import annotations

import importlib
import ipaddress
import re
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from worldmm.capture.local_uploads import UPLOADS_PATH, LocalUploadSigner
from worldmm.capture.models import UploadKind
from worldmm.capture.s3_events import parse_key, record_notification
from worldmm.capture.service import CaptureService
from worldmm.errors import ConfigurationError, Unauthenticated
from worldmm.events.local import LocalEventHub
from worldmm.forget_user import sweep_unclaimed_uploads
from worldmm.gateway.auth import verify_token
from worldmm.gateway.confirm import ConfirmationCodes, ConsoleChannel
from worldmm.gateway.events import LocalLambdaContext, build_event, from_lambda_response
from worldmm.gateway.keys import gateway_keys
from worldmm.gateway.mcp import MCP_PATH, build_mcp_server, mcp_asgi_app
from worldmm.gateway.openapi import openapi_document
from worldmm.gateway.page import page_routes
from worldmm.gateway.routes import ROUTES, ApiRoute
from worldmm.gateway.settings import GatewaySettings
from worldmm.gateway.sse import EVENTS_PATH, EventStreams
from worldmm.retrieval.reader import load_model

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from worldmm.services import Services

logger = Logger(child=True)

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
MAX_UPLOAD_BYTES = 32 * 1024 * 1024
MAX_API_BODY_BYTES = 10 * 1024 * 1024
"""API Gateway's HTTP API payload limit: a larger request is a 413 before any of it is held."""


class BodyTooLarge(Exception):
    """The request declares or sends more than the route takes."""


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused by its Content-Length before reading, or as soon as it passes `limit`."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise BodyTooLarge
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge
    return bytes(body)


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/]+)", re.escape(path)) + "$")


@dataclass
class _Bound:
    route: ApiRoute
    pattern: re.Pattern[str]
    lock: threading.Lock
    handler: Handler | None = None


class UploadNotifications:
    """Records landed uploads one at a time off the request thread, as the bucket's queue does."""

    def __init__(self, bucket: str, service: CaptureService, sweep: Callable[[set[str]], int]) -> None:
        self._bucket = bucket
        self._service = service
        self._sweep = sweep  # erases uploads to sessions no catalog knows (their user was forgotten)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="upload-events")
        self._pending: set[Future[None]] = set()
        self._lock = threading.Lock()

    def _record(self, key: str) -> None:
        notification = {
            "Records": [
                {
                    "eventSource": "aws:s3",
                    "eventName": "ObjectCreated:Put",
                    "s3": {"bucket": {"name": self._bucket}, "object": {"key": key}},
                }
            ]
        }
        try:
            outcomes = record_notification(notification, self._service)
            for outcome in outcomes:
                logger.info("upload_recorded", extra=outcome.model_dump(exclude_none=True))
            self._sweep({o.sessionId for o in outcomes if o.status == "ignored" and o.sessionId})
        except Exception:
            logger.exception("upload_record_failed", extra={"key": key})

    def submit(self, key: str) -> None:
        future = self._pool.submit(self._record, key)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)

    def drain(self, timeout: float | None = None) -> None:
        """Wait until every upload recorded so far (and the ingest it set off) is done."""
        with self._lock:
            pending = set(self._pending)
        wait(pending, timeout=timeout)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _json(status: int, payload: dict[str, Any]) -> JSONResponse:
    return JSONResponse(payload, status_code=status)


async def _not_found(request: Request, exc: Exception) -> Response:
    """A path no route can hold (one with a newline, say) is API Gateway's JSON 404, not Starlette's text."""
    return _json(404, {"message": "Not Found"})


def _s3_error(code: str, status: int) -> Response:
    return Response(f"<Error><Code>{code}</Code></Error>".encode(), status_code=status, media_type="application/xml")


class Gateway:
    """Routes, authorizes and invokes; one invocation per handler at a time, as in one Lambda container."""

    def __init__(self, services: Services, signer: LocalUploadSigner, notifications: UploadNotifications) -> None:
        self.services = services
        self.signer = signer
        self.notifications = notifications
        self._routes = [_Bound(r, _pattern(r.path), threading.Lock()) for r in ROUTES]

    def match(self, method: str, path: str) -> tuple[_Bound, dict[str, str]] | None:
        for bound in self._routes:
            found = bound.pattern.match(path)
            if found and bound.route.method == method:
                return bound, found.groupdict()
        return None

    def _invoke(self, bound: _Bound, event: dict[str, Any]) -> dict[str, Any]:
        with bound.lock:
            if bound.handler is None:
                bound.handler = importlib.import_module(bound.route.handler).lambda_handler
            function_name = bound.route.function
            return bound.handler(event, LocalLambdaContext(function_name=function_name))

    async def api(self, request: Request) -> Response:
        """One API request → the handler's response, as API Gateway answers it."""
        matched = self.match(request.method, request.url.path)
        if matched is None:
            return _json(404, {"message": "Not Found"})
        bound, params = matched
        try:
            claims = verify_token(request.headers.get("authorization"), self.services.settings_of(GatewaySettings))
        except Unauthenticated as exc:
            logger.info("rejected request", extra={"route": bound.route.route_key, "reason": str(exc)})
            return _json(401, {"message": "Unauthorized"})
        try:
            body = await read_body(request, MAX_API_BODY_BYTES)
        except BodyTooLarge:
            return _json(413, {"message": "Request Entity Too Large"})
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        event = build_event(
            request.method,
            target,
            dict(request.headers),
            body,
            claims,
            source_ip=request.client.host if request.client else "127.0.0.1",
            route_key=bound.route.route_key,
            path_parameters=params,
        )
        try:
            result = await run_in_threadpool(self._invoke, bound, event)
        except Exception:
            logger.exception("handler failed", extra={"route": bound.route.route_key})
            return _json(500, {"message": "Internal Server Error"})
        status, headers, body = from_lambda_response(result)
        kept = {k: v for k, v in headers.items() if k.lower() not in {"content-length", "connection"}}
        return Response(body, status_code=status, headers=kept)

    def _kind_limit(self, key: str) -> int:
        """The longest object a key of this kind takes (a frame's or an audio chunk's bound; else the gateway's)."""
        upload = parse_key(key)
        if upload is None:
            return MAX_UPLOAD_BYTES
        settings = self.services.settings_of(GatewaySettings)
        return settings.capture_max_frame_bytes if upload.kind is UploadKind.FRAME else settings.capture_max_audio_bytes

    async def _land(self, key: str, body: bytes) -> None:
        await run_in_threadpool(self.services.store.put, key, body)
        if parse_key(key) is not None:
            self.notifications.submit(key)

    async def upload(self, request: Request) -> Response:
        """A presigned PUT: check the signature, store the object, queue its ObjectCreated record."""
        key = request.path_params["key"]
        query = request.query_params
        content_type = request.headers.get("content-type", "")
        if not self.signer.check(key, query.get("expires"), content_type, query.get("signature")):
            return _s3_error("AccessDenied", 403)
        try:
            body = await read_body(request, min(MAX_UPLOAD_BYTES, self._kind_limit(key)))
        except BodyTooLarge:
            return _s3_error("EntityTooLarge", 400)
        await self._land(key, body)
        return Response(b"", status_code=200)

    async def upload_form(self, request: Request) -> Response:
        """A presigned POST, as S3 takes one: multipart form fields, then `file`; the signed fields must hold,
        and the file be 1 byte to the signed `max-bytes` long (S3's EntityTooSmall/EntityTooLarge otherwise)."""
        from worldmm.gateway.upload_form import FormRefused, read_signed_form

        try:
            form = await read_signed_form(
                request.headers.get("content-type", ""),
                request.headers.get("content-length"),
                request.stream(),
                self.signer.check_post,
                MAX_UPLOAD_BYTES,
            )
        except FormRefused as refused:
            return _s3_error(refused.code, refused.status)
        fields, data = form.fields, form.data
        await self._land(fields["key"], data)
        return Response(b"", status_code=204)

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document(self.services.settings_of(GatewaySettings)))


class EventDispatcher:
    """`worldmm serve`'s background recovery of app events (the reaper's part on aws): every `period_s`
    whatever is left unpublished, and every `sessions_every` rounds the `SessionProcessed` no window run
    recorded (worldmm.ingest.app_events)."""

    def __init__(self, services: Services, period_s: float = 5.0, sessions_every: int = 12) -> None:
        self._services = services
        self._period_s = period_s
        self._sessions_every = sessions_every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        from worldmm.ingest.app_events import recover_events

        rounds = 0
        while not self._stop.wait(self._period_s):
            rounds += 1
            try:
                recover_events(self._services, sessions=rounds % self._sessions_every == 1)
            except Exception as exc:  # the next round tries again; the outbox keeps everything
                logger.warning("events_recovery_failed", extra={"error_type": type(exc).__name__})

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="event-dispatcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def local_capture_service(
    services: Services, public_url: str, *, clock: Callable[[], float] = time.time
) -> CaptureService:
    """Capture on the local profile: sessions in the object store, uploads signed for this gateway."""
    signer = LocalUploadSigner(public_url, gateway_keys(services.settings_of(GatewaySettings)).upload, clock=clock)
    return CaptureService(services.capture_settings, services.capture_state, signer, services.invoker, clock=clock)


def create_app(
    services: Services,
    *,
    public_url: str,
    host: str = "127.0.0.1",
    clock: Callable[[], float] = time.time,
    confirmations: ConfirmationCodes | None = None,
) -> Starlette:
    """The gateway over `services` (installed as the handlers' process default), reachable at `public_url`;
    MCP's irreversible tools are confirmed with codes shown on `confirmations`' channel (default: the console)."""
    from worldmm.services import set_services

    capture = local_capture_service(services, public_url, clock=clock)
    publisher = services.event_publisher  # built before the copy: the ingest and the streams share one hub
    services = services.replace(capture=capture)
    set_services(services)
    signer = capture.s3
    assert isinstance(signer, LocalUploadSigner)
    notifications = UploadNotifications(
        services.settings_of(GatewaySettings).frames_bucket, capture, lambda ids: sweep_unclaimed_uploads(services, ids)
    )
    gateway = Gateway(services, signer, notifications)
    confirmations = confirmations or ConfirmationCodes(ConsoleChannel())
    mcp_server = build_mcp_server(
        services.for_user, services.settings_of(GatewaySettings), public_url=public_url, confirmations=confirmations
    )
    mcp_app = mcp_asgi_app(mcp_server, host=host, public_url=public_url)

    hub = publisher if isinstance(publisher, LocalEventHub) else None
    streams = EventStreams(services.settings_of(GatewaySettings), services.db, hub)
    dispatcher = EventDispatcher(services)

    app = Starlette(
        routes=_routes(gateway, streams, mcp_app),
        lifespan=_lifespan(dispatcher, mcp_server, notifications),
        exception_handlers={404: _not_found},
    )
    app.state.gateway = gateway
    return app


def _lifespan(
    dispatcher: EventDispatcher, mcp_server: MCPServer, notifications: UploadNotifications
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The app's lifespan: the event dispatcher and MCP's session manager run while it serves; then the upload
    notifications are closed."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        dispatcher.start()
        try:
            async with mcp_server.session_manager.run():
                yield
        finally:
            dispatcher.stop()
        notifications.close()

    return lifespan


def _routes(gateway: Gateway, streams: EventStreams, mcp_app: Any) -> list[Route]:
    """The gateway's routes, in matching order: the document, the event stream, uploads, the page, MCP, then
    every API route."""
    # Every method reaches `api`, which answers 404 where no route matches, as the HTTP API does (it has no
    # CORS configuration, so OPTIONS too): never a 405 with an Allow header the deployed API would not send.
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    return [
        Route("/openapi.json", gateway.openapi, methods=["GET"]),
        Route(EVENTS_PATH, streams.endpoint, methods=["GET"]),
        Route(UPLOADS_PATH, gateway.upload_form, methods=["POST"]),
        *page_routes(),
        Route(UPLOADS_PATH + "{key:path}", gateway.upload, methods=["PUT"]),
        Route(MCP_PATH, mcp_app),
        Route("/{path:path}", gateway.api, methods=methods),
    ]


def loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: GatewaySettings, host: str, *, tls: bool, public_url: str | None = None) -> None:
    """ConfigurationError unless the gateway may listen on `host`: never in the aws profile, and off
    loopback only over TLS (a bearer token on a LAN in plain HTTP is anyone's who listens), at an https
    `public_url` (the address upload URLs point at and the only Host MCP answers besides loopback)."""
    keys = gateway_keys(settings)  # refuses the aws profile; a weak JWT_DEV_SECRET never got this far
    if loopback(host):
        return
    if not tls:
        raise ConfigurationError(
            f"serve --host {host} reaches beyond this machine: give --tls-cert and --tls-key (tokens and "
            "uploads must not cross the network in plain HTTP), or listen on 127.0.0.1"
        )
    if not (public_url or "").startswith("https://"):
        raise ConfigurationError(
            f"serve --host {host} needs --public-url https://<the address clients reach>: upload URLs point "
            "there, and MCP answers only requests addressed to it"
        )
    logger.info("gateway exposed", extra={"host": host, "key": "explicit" if keys.explicit else "install"})


def serve(
    host: str = "127.0.0.1",
    port: int = 8080,
    services: Services | None = None,
    public_url: str | None = None,
    *,
    tls_cert: str | None = None,
    tls_key: str | None = None,
) -> None:
    """Serve the gateway on host:port until interrupted (`worldmm serve`); off loopback only over TLS."""
    import uvicorn

    from worldmm.services import get_services

    services = services or get_services()
    if (tls_cert is None) != (tls_key is None):
        raise ConfigurationError("--tls-cert and --tls-key go together")
    tls = tls_cert is not None
    check_exposure(services.settings_of(GatewaySettings), host, tls=tls, public_url=public_url)
    scheme = "https" if tls else "http"
    url = public_url or f"{scheme}://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
    app = create_app(services, public_url=url, host=host)
    # The reader's model (a GGUF of a GB) loads while the server starts, not in the first question's time.
    threading.Thread(target=load_model, args=(services,), name="load-reader", daemon=True).start()
    logger.info("local gateway listening", extra={"url": url, "mcp": url + MCP_PATH})
    uvicorn.run(app, host=host, port=port, log_level="warning", ssl_certfile=tls_cert, ssl_keyfile=tls_key)
