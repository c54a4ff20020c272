"""Signed calls to the GPU worker: each request carries an HMAC over its method, path, time, nonce and body,
and each answer an HMAC over that request's signature, its status and its body — the shared key never travels.

gpu_worker/auth.py checks the same format on the worker (it ships without this library);
tests/unit/test_gpu_worker_signing.py holds the two sides to each other.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Generator
from typing import Any

import httpx

SIGNATURE_HEADER = "X-Worker-Signature"
TIMESTAMP_HEADER = "X-Worker-Timestamp"
NONCE_HEADER = "X-Worker-Nonce"
RESPONSE_SIGNATURE_HEADER = "X-Worker-Response-Signature"
REPLAY_WINDOW_S = 60
"""How far a request's time may be from the worker's clock; the worker remembers nonces this long."""

_REQUEST = "worldmm-worker-request-v1"
_RESPONSE = "worldmm-worker-response-v1"
_HEALTH = "worldmm-worker-health-v1"


def body_hash(body: bytes) -> str:
    """SHA-256 of a body, hex."""
    return hashlib.sha256(body).hexdigest()


def _mac(key: str, *parts: str) -> str:
    return hmac.new(key.encode(), "\n".join(parts).encode(), hashlib.sha256).hexdigest()


def request_signature(key: str, method: str, path: str, timestamp: str, nonce: str, body: bytes) -> str:
    """The caller's signature of one request (`path` with its query string, as sent)."""
    return _mac(key, _REQUEST, method.upper(), path, timestamp, nonce, body_hash(body))


def response_signature(key: str, request_sig: str, status: int, body: bytes) -> str:
    """The worker's signature of its answer to the request signed `request_sig` (so no answer is replayed)."""
    return _mac(key, _RESPONSE, request_sig, str(status), body_hash(body))


def health_proof(key: str, challenge: str) -> str:
    """The worker's proof of the key for a /health challenge the caller chose (a domain apart from requests)."""
    return _mac(key, _HEALTH, challenge)


class UnsignedWorkerResponse(httpx.HTTPError):
    """An answer without a valid signature from the worker: not trusted, whatever it says."""

    def __init__(self, status: int) -> None:
        super().__init__(f"the GPU worker's answer (HTTP {status}) is not signed with the worker key")
        self.status = status


def signed_exchange(
    key_provider: Callable[[], str | None], clock: Callable[[], float], request: Any
) -> Generator[Any, Any, None]:
    """The auth flow of one call (httpx or the OpenAI SDK's httpx2 request and response alike): sign the request,
    then raise UnsignedWorkerResponse unless the answer is signed over it. Without a key (a local worker started
    with WORKER_ALLOW_UNAUTHENTICATED) the request goes unsigned and the answer unchecked."""
    key = key_provider()
    if not key:
        yield request
        return
    timestamp = str(int(clock()))
    nonce = secrets.token_hex(16)
    path = request.url.raw_path.decode("ascii")
    signature = request_signature(key, request.method, path, timestamp, nonce, request.content)
    request.headers[TIMESTAMP_HEADER] = timestamp
    request.headers[NONCE_HEADER] = nonce
    request.headers[SIGNATURE_HEADER] = signature
    response = yield request
    presented = response.headers.get(RESPONSE_SIGNATURE_HEADER, "")
    expected = response_signature(key, signature, response.status_code, response.content)
    if not hmac.compare_digest(presented.encode(), expected.encode()):
        raise UnsignedWorkerResponse(response.status_code)


class WorkerSigner(httpx.Auth):
    """httpx auth: signs each request with the worker key and checks the answer's signature before it is used
    (the aws profile always has a key: GPU_WORKER_TOKEN_SECRET_ARN)."""

    requires_request_body = True
    requires_response_body = True

    def __init__(self, key: Callable[[], str | None], clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._clock = clock

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        yield from signed_exchange(self._key, self._clock, request)


def signer_for(auth_base: type, key: Callable[[], str | None], clock: Callable[[], float] = time.time) -> Any:
    """The same signer for another httpx-like library, given its Auth base (the OpenAI SDK and Starlette's test
    client use httpx2)."""

    class _Signer(auth_base):
        requires_request_body = True
        requires_response_body = True

        def auth_flow(self, request: Any) -> Generator[Any, Any, None]:
            yield from signed_exchange(key, clock, request)

    return _Signer()
