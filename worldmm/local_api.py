"""A local stand-in for API Gateway (HTTP API, payload v2, JWT authorizer) in front of the `api/` handlers.

`worldmm serve` runs it: each HTTP request is matched to a route, its Bearer token is verified
(HS256 with the local development key, issuer and audience from settings) as API Gateway's JWT
authorizer would, and the request becomes the v2 event the Lambda handler receives in production.
`worldmm token --user-id U` prints a token for it. No Docker, no cloud account.
"""

from __future__ import annotations

import base64
import importlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from aws_lambda_powertools import Logger

from worldmm.config import Settings
from worldmm.errors import Unauthenticated

if TYPE_CHECKING:
    from worldmm.services import Services

logger = Logger(service="worldmm-local-api", child=True)

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

# Route key → module holding `lambda_handler` (the same routes template.yaml declares).
ROUTES: dict[str, str] = {
    "POST /memories/chat": "api.memories.chat.app",
    "POST /memories/chat/verbose": "api.memories.chat_verbose.app",
    "POST /chats/list": "api.chats.list.app",
    "GET /chats/messages": "api.chats.messages.app",
}


def issue_token(user_id: str, settings: Settings, ttl_s: int = 3600) -> str:
    """A development JWT (HS256, local key) whose `sub` is `user_id`, valid for `ttl_s` seconds."""
    import jwt

    now = int(time.time())
    claims = {
        "sub": user_id,
        "iss": settings.jwt_issuer,
        "aud": settings.jwt_audience,
        "iat": now,
        "exp": now + ttl_s,
    }
    return jwt.encode(claims, settings.jwt_dev_secret, algorithm="HS256")


def verify_token(authorization: str | None, settings: Settings) -> dict[str, Any]:
    """The claims of a valid `Bearer` token; Unauthenticated if missing, expired or not ours."""
    import jwt

    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("missing bearer token")
    try:
        claims: dict[str, Any] = jwt.decode(
            token.strip(),
            settings.jwt_dev_secret,
            algorithms=["HS256"],
            audience=settings.jwt_audience,
            issuer=settings.jwt_issuer,
            options={"require": ["sub", "exp", "iss", "aud"]},
        )
    except jwt.PyJWTError as exc:
        raise Unauthenticated(f"invalid token: {exc}") from exc
    return claims


def _claim_text(value: Any) -> str:
    # API Gateway hands claims to the function as strings (arrays as "[a b]").
    if isinstance(value, list):
        return "[" + " ".join(str(v) for v in value) + "]"
    return value if isinstance(value, str) else json.dumps(value)


def build_event(
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
    claims: dict[str, Any],
    *,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The API Gateway HTTP API v2 event for one request (route key, path, query, body, JWT claims)."""
    url = urlsplit(target)
    path = url.path or "/"
    route_key = f"{method} {path}"
    query = parse_qs(url.query, keep_blank_values=True)
    now = datetime.now(UTC)
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        text_body: str | None = body.decode("utf-8") if body else None
        is_base64 = False
    except UnicodeDecodeError:
        text_body, is_base64 = base64.b64encode(body).decode("ascii"), True
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": url.query,
        "headers": lowered,
        "requestContext": {
            "accountId": "local",
            "apiId": "local",
            "authorizer": {"jwt": {"claims": {k: _claim_text(v) for k, v in claims.items()}, "scopes": None}},
            "domainName": lowered.get("host", "localhost"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": is_base64,
    }
    if query:
        event["queryStringParameters"] = {k: ",".join(v) for k, v in query.items()}
    if text_body is not None:
        event["body"] = text_body
    return event


@dataclass
class LocalLambdaContext:
    """The parts of the Lambda context object handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timeout_s: float = 30.0
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    @property
    def function_version(self) -> str:
        return "$LATEST"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return "local"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_s - (time.monotonic() - self.started)) * 1000))


class LocalApiGateway:
    """Routes, authorizes and invokes; one invocation per handler at a time, as in one Lambda container."""

    def __init__(self, settings: Settings, routes: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.routes = dict(routes or ROUTES)
        self._handlers: dict[str, Handler] = {}
        self._locks = {route: threading.Lock() for route in self.routes}

    def handler_for(self, route_key: str) -> Handler:
        if route_key not in self._handlers:
            module = importlib.import_module(self.routes[route_key])
            self._handlers[route_key] = module.lambda_handler
        return self._handlers[route_key]

    def invoke(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """One HTTP request → (status, headers, body), as API Gateway would answer it."""
        route_key = f"{method} {urlsplit(target).path}"
        if route_key not in self.routes:
            return _json(404, {"message": "Not Found"})
        try:
            claims = verify_token(_header(headers, "authorization"), self.settings)
        except Unauthenticated as exc:
            logger.info("rejected request", extra={"route": route_key, "reason": str(exc)})
            return _json(401, {"message": "Unauthorized"})
        event = build_event(method, target, headers, body, claims)
        function_name = self.routes[route_key].rsplit(".", 2)[-2]
        try:
            with self._locks[route_key]:
                result = self.handler_for(route_key)(event, LocalLambdaContext(function_name=function_name))
        except Exception:
            logger.exception("handler failed", extra={"route": route_key})
            return _json(500, {"message": "Internal Server Error"})
        return _from_lambda_response(result)


def _header(headers: dict[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _json(status: int, payload: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode("utf-8")


def _from_lambda_response(result: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    headers = {k: str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name] = ", ".join(str(v) for v in values)
    return int(result.get("statusCode", 200)), headers, body


class _RequestHandler(BaseHTTPRequestHandler):
    server: _LocalHttpServer
    protocol_version = "HTTP/1.1"

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status, headers, payload = self.server.gateway.invoke(
            self.command, self.path, dict(self.headers), body
        )
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in {"content-length", "connection", "transfer-encoding"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug(format % args)


class _LocalHttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], gateway: LocalApiGateway) -> None:
        super().__init__(address, _RequestHandler)
        self.gateway = gateway


def make_server(host: str, port: int, services: Services) -> ThreadingHTTPServer:
    """A bound (not yet serving) local API server; `services` becomes the handlers' process default."""
    from worldmm.services import set_services

    set_services(services)
    return _LocalHttpServer((host, port), LocalApiGateway(services.settings))


def serve(host: str = "127.0.0.1", port: int = 8080, services: Services | None = None) -> None:
    """Serve the API on host:port until interrupted."""
    from worldmm.services import get_services

    server = make_server(host, port, services or get_services())
    bound_host, bound_port = server.server_address[:2]
    logger.info("local API listening", extra={"url": f"http://{bound_host!s}:{bound_port}"})
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
