"""The Lambdas' side of signed GPU worker calls: GpuWorkerClient signs each request and uses no answer the
worker did not sign over it (worldmm.worker_signing; the worker's side is tests/unit/test_gpu_worker_app.py)."""

from __future__ import annotations

import httpx
import pytest

from tests.support.harness import make_settings
from worldmm.errors import GpuRequestError
from worldmm.gpu.client import GpuWorkerClient
from worldmm.gpu.settings import GpuClientSettings
from worldmm.worker_signing import (
    NONCE_HEADER,
    RESPONSE_SIGNATURE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    request_signature,
    response_signature,
)

pytestmark = pytest.mark.unit

KEY = "worker-key-0123456789abcdef-0123456789abcdef"


def worker(sign_answer: bool, seen: list[httpx.Request]) -> httpx.MockTransport:
    """A stand-in worker: checks the request's signature; signs its answer only when told to."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        expected = request_signature(
            KEY,
            request.method,
            request.url.raw_path.decode(),
            request.headers[TIMESTAMP_HEADER],
            request.headers[NONCE_HEADER],
            request.content,
        )
        assert request.headers[SIGNATURE_HEADER] == expected
        body = b'{"embedding": [1.0, 0.0]}'
        headers = {"Content-Type": "application/json"}
        if sign_answer:
            headers[RESPONSE_SIGNATURE_HEADER] = response_signature(KEY, expected, 200, body)
        return httpx.Response(200, content=body, headers=headers)

    return httpx.MockTransport(handler)


def client(sign_answer: bool, seen: list[httpx.Request]) -> GpuWorkerClient:
    settings = GpuClientSettings.of(make_settings(gpu_worker_token=KEY, gpu_retries=0))
    return GpuWorkerClient(lambda: "http://10.0.0.1:8000", settings, transport=worker(sign_answer, seen))


def test_gpu_client_signs_each_request_and_never_sends_the_key_fails_on_todays_code() -> None:
    seen: list[httpx.Request] = []
    assert client(True, seen).post_json("/encode-text", {"text": "a dog"}) == {"embedding": [1.0, 0.0]}
    (request,) = seen
    assert KEY not in str(request.headers) and "X-Worker-Token" not in request.headers
    assert "authorization" not in request.headers


def test_gpu_client_rejects_an_unsigned_worker_answer_fails_on_todays_code() -> None:
    # GIVEN whoever answers at the worker's address without the key (a 200 with plausible JSON)
    seen: list[httpx.Request] = []
    # THEN the client uses nothing of it
    with pytest.raises(GpuRequestError, match="not signed"):
        client(False, seen).post_json("/encode-text", {"text": "a dog"})


def test_gpu_client_nonces_differ_between_identical_requests() -> None:
    seen: list[httpx.Request] = []
    gpu = client(True, seen)
    gpu.post_json("/encode-text", {"text": "a dog"})
    gpu.post_json("/encode-text", {"text": "a dog"})
    assert seen[0].headers[NONCE_HEADER] != seen[1].headers[NONCE_HEADER]
