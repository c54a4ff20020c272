"""Signed requests and answers (the key is shared with the callers and never sent): a model call must carry
an HMAC-SHA256 over its method, path, a timestamp within REPLAY_WINDOW_S, a nonce not seen before and its body's
hash; its answer carries one over that signature, the status and the body. worldmm/worker_signing.py is the caller's
side of the same format (this package ships without the worldmm library)."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Callable

from fastapi import HTTPException, Request, status
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpu_worker.settings import WorkerSettings

SIGNATURE_HEADER = "X-Worker-Signature"
TIMESTAMP_HEADER = "X-Worker-Timestamp"
NONCE_HEADER = "X-Worker-Nonce"
RESPONSE_SIGNATURE_HEADER = "X-Worker-Response-Signature"
REPLAY_WINDOW_S = 60
MAX_NONCE_CHARS = 64
MAX_REMEMBERED_NONCES = 100_000
SIGNED_SCOPE_KEY = "worldmm.worker_signature"

_REQUEST = "worldmm-worker-request-v1"
_RESPONSE = "worldmm-worker-response-v1"
_HEALTH = "worldmm-worker-health-v1"


def _mac(key: str, *parts: str) -> str:
    return hmac.new(key.encode(), "\n".join(parts).encode(), hashlib.sha256).hexdigest()


def request_signature(key: str, method: str, path: str, timestamp: str, nonce: str, body: bytes) -> str:
    """The signature a caller puts on a request (`path` with its query string, as sent)."""
    return _mac(key, _REQUEST, method.upper(), path, timestamp, nonce, hashlib.sha256(body).hexdigest())


def response_signature(key: str, request_sig: str, status_code: int, body: bytes) -> str:
    """The signature of the answer to the request signed `request_sig`."""
    return _mac(key, _RESPONSE, request_sig, str(status_code), hashlib.sha256(body).hexdigest())


def health_proof(key: str, challenge: str) -> str:
    """HMAC of the caller's /health challenge, in a domain of its own (no proof is ever a request signature)."""
    return _mac(key, _HEALTH, challenge)


class NonceLedger:
    """Nonces seen within the replay window: a second request with one is a replay."""

    def __init__(self, window_s: float = REPLAY_WINDOW_S, clock: Callable[[], float] = time.time) -> None:
        self.window_s = window_s
        self.clock = clock
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_use(self, nonce: str) -> bool:
        """Record `nonce`; False when it was already used within the window (or the ledger is full)."""
        now = self.clock()
        with self._lock:
            if len(self._seen) >= MAX_REMEMBERED_NONCES:
                self._seen = {n: t for n, t in self._seen.items() if now - t <= 2 * self.window_s}
                if len(self._seen) >= MAX_REMEMBERED_NONCES:
                    return False  # fail closed rather than forget a nonce still inside the window
            if nonce in self._seen:
                return False
            self._seen[nonce] = now
            return True


def _signed_path(scope: Scope) -> str:
    raw = scope.get("raw_path") or scope["path"].encode()
    query = scope.get("query_string") or b""
    return (raw + (b"?" + query if query else b"")).decode("latin-1")


def _unauthorized(reason: str) -> HTTPException:
    return HTTPException(status_code=status.HTTP_401_UNAUTHORIZED, detail=f"unsigned request: {reason}")


async def require_signature(request: Request) -> None:
    """FastAPI dependency: 401 unless the request is signed with the worker key, fresh and not replayed."""
    settings: WorkerSettings = request.app.state.settings
    ledger: NonceLedger = request.app.state.nonces
    if settings.token is None:
        if settings.allow_unauthenticated:
            return
        raise _unauthorized("this worker has no key (WORKER_TOKEN) and refuses every call")
    headers = request.headers
    presented, timestamp, nonce = (
        headers.get(SIGNATURE_HEADER),
        headers.get(TIMESTAMP_HEADER),
        headers.get(NONCE_HEADER),
    )
    if not presented or not timestamp or not nonce or len(nonce) > MAX_NONCE_CHARS:
        raise _unauthorized("missing signature, timestamp or nonce")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise _unauthorized("bad timestamp") from None
    if abs(ledger.clock() - sent_at) > ledger.window_s:
        raise _unauthorized("stale or future timestamp")
    key = settings.token.get_secret_value()
    body = await request.body()
    expected = request_signature(key, request.method, _signed_path(request.scope), timestamp, nonce, body)
    if not hmac.compare_digest(presented.encode(), expected.encode()):
        raise _unauthorized("wrong signature")
    if not ledger.first_use(nonce):
        raise _unauthorized("replayed nonce")
    request.scope[SIGNED_SCOPE_KEY] = expected


class SignResponses:
    """ASGI middleware: the answer to a request `require_signature` accepted is buffered and signed over its
    request's signature, status and body; every other answer goes out unsigned (the caller rejects it)."""

    def __init__(self, app: ASGIApp, settings: WorkerSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.settings.token is None:
            await self.app(scope, receive, send)
            return
        key = self.settings.token.get_secret_value()
        start: Message | None = None
        chunks: list[bytes] = []

        async def signing_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            signed = scope.get(SIGNED_SCOPE_KEY)
            headers = list(start.get("headers", []))
            if signed:
                mac = response_signature(key, signed, start["status"], body)
                headers.append((RESPONSE_SIGNATURE_HEADER.lower().encode(), mac.encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, signing_send)
