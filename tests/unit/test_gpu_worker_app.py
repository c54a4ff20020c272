"""The GPU worker app on a tiny random Qwen2-VL: real loading, preprocessing, pooling, auth and limits."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2
import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.support.gpu_worker import TOKEN, b64, build_tiny_qwen2vl, gated_loader, jpeg_bytes, worker_settings
from worldmm.worker_signing import (
    NONCE_HEADER,
    RESPONSE_SIGNATURE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    UnsignedWorkerResponse,
    WorkerSigner,
    health_proof,
    request_signature,
    response_signature,
    signer_for,
)

pytestmark = pytest.mark.unit

SIGNED = signer_for(httpx2.Auth, lambda: TOKEN)
"""What the Lambdas send: each request signed with the worker key, each answer's signature checked."""


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-qwen2vl"))


def wait_ready(client: TestClient, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get("/health").json()
        if body["status"] != "loading":
            return body
        time.sleep(0.05)
    raise AssertionError("worker did not finish loading")


@pytest.fixture(scope="module")
def client(model_dir):
    from gpu_worker.app import create_app

    with TestClient(create_app(worker_settings(model_dir))) as test_client:
        assert wait_ready(test_client)["status"] == "ready"
        yield test_client


def clip(n: int, seed: int = 0) -> list[str]:
    return [b64(jpeg_bytes(seed + i)) for i in range(n)]


def test_health_reports_loading_until_models_are_loaded_then_ready(model_dir):
    # GIVEN a worker whose (real) loader is held back
    from gpu_worker.app import create_app

    gate = threading.Event()
    app = create_app(worker_settings(model_dir), loader=gated_loader(gate))
    with TestClient(app) as client:
        # WHEN it is asked before loading ends THEN health says loading and encoding answers 503
        assert client.get("/health").json()["status"] == "loading"
        busy = client.post("/encode-text", json={"text": "a dog"}, auth=SIGNED)
        assert busy.status_code == 503 and busy.headers["Retry-After"]
        # WHEN loading completes THEN health says ready with the model ids
        gate.set()
        body = wait_ready(client)
        assert {k: body[k] for k in ("status", "models", "error")} == {
            "status": "ready",
            "models": {"embedding": "tiny-qwen2vl", "generation": model_dir.name},
            "error": None,
        }


def test_health_reports_idleness_since_the_last_model_request(model_dir):
    # GIVEN a worker on a clock we move
    from gpu_worker.app import create_app

    now = [1000.0]
    with TestClient(create_app(worker_settings(model_dir), clock=lambda: now[0])) as client:
        wait_ready(client)
        now[0] += 300
        # THEN before any request it is idle since it started
        body = client.get("/health").json()
        assert body["idle_s"] == 300 and body["last_request_at"] is None and body["requests_served"] == 0
        # WHEN it serves a request THEN idleness counts from that request; health checks do not count
        assert client.post("/encode-text", json={"text": "a dog"}, auth=SIGNED).status_code == 200
        now[0] += 42
        client.get("/health")
        body = client.get("/health").json()
        assert body["idle_s"] == 42 and body["last_request_at"] == 1300 and body["requests_served"] == 1
        assert body["in_flight"] == 0
        # AND a request refused for its token is not work
        assert client.post("/encode-text", json={"text": "a dog"}).status_code == 401
        assert client.get("/health").json()["requests_served"] == 1


def test_a_request_has_ended_by_the_time_its_last_byte_reaches_the_client(model_dir):
    # GIVEN the activity middleware around an endpoint that counts as work
    import asyncio

    from gpu_worker.app import SERVED_SCOPE_KEY, ActivityTracker, WorkerState

    state = WorkerState(worker_settings(model_dir), clock=lambda: 5.0)

    async def endpoint(scope, receive, send) -> None:
        scope[SERVED_SCOPE_KEY] = True
        state.begin_request()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})

    busy_when_sent: list[int] = []

    async def send(message) -> None:  # the server: after this the client may hold the whole response
        busy_when_sent.append(state.in_flight)

    # WHEN a request runs through it
    asyncio.run(ActivityTracker(endpoint, state)({"type": "http"}, None, send))
    # THEN it is busy while its head goes out and over when its last byte does: a client that has the
    # response never reads the worker as busy with it (nor its idleness as starting later)
    assert busy_when_sent == [1, 0] and state.requests_served == 1


def test_health_proves_the_key_only_for_the_callers_own_challenge(client):
    assert client.get("/health").json()["proof"] is None
    proof = client.get("/health", headers={"X-Worker-Challenge": "nonce-1"}).json()["proof"]
    # THEN the proof answers this challenge alone (a relayed one fails a fresh challenge) in a domain of its own
    assert proof == health_proof(TOKEN, "nonce-1") != health_proof(TOKEN, "nonce-2")
    assert proof != request_signature(TOKEN, "GET", "/health", "0", "nonce-1", b"")
    assert client.get("/health", headers={"X-Worker-Challenge": "x" * 129}).status_code == 422


def test_health_reports_failed_when_the_model_directory_is_missing(tmp_path):
    from gpu_worker.app import create_app

    with TestClient(create_app(worker_settings(tmp_path / "absent"))) as client:
        body = wait_ready(client)
        assert body["status"] == "failed" and body["error"]
        assert client.post("/encode-text", json={"text": "x"}, auth=SIGNED).status_code == 503


def test_encode_video_returns_an_l2_normalised_vector_of_the_configured_dimension(client):
    response = client.post("/encode-video", json={"frames": clip(16)}, auth=SIGNED)

    assert response.status_code == 200
    body = response.json()
    assert body["dim"] == 8 and len(body["embedding"]) == 8 and body["model"] == "tiny-qwen2vl"
    assert np.linalg.norm(body["embedding"]) == pytest.approx(1.0, abs=1e-5)


def test_encode_video_depends_on_the_frames(client):
    first = client.post("/encode-video", json={"frames": clip(4, seed=0)}, auth=SIGNED).json()
    again = client.post("/encode-video", json={"frames": clip(4, seed=0)}, auth=SIGNED).json()
    other = client.post("/encode-video", json={"frames": clip(4, seed=100)}, auth=SIGNED).json()

    assert np.allclose(first["embedding"], again["embedding"], atol=1e-6)
    assert not np.allclose(first["embedding"], other["embedding"], atol=1e-4)


def test_encode_text_returns_a_unit_vector_in_the_same_space_as_clips(client):
    video = client.post("/encode-video", json={"frames": clip(2)}, auth=SIGNED).json()
    text = client.post("/encode-text", json={"text": "a dog runs in the snow"}, auth=SIGNED).json()

    assert text["dim"] == video["dim"] == 8
    assert np.linalg.norm(text["embedding"]) == pytest.approx(1.0, abs=1e-5)
    assert -1.0 <= float(np.dot(text["embedding"], video["embedding"])) <= 1.0


def test_concurrent_encode_requests_are_batched_with_the_same_results(client):
    # GIVEN each clip's embedding computed alone
    clips = [clip(2 + i % 3, seed=10 * i) for i in range(6)]
    alone = [client.post("/encode-video", json={"frames": c}, auth=SIGNED).json()["embedding"] for c in clips]
    batcher = client.app.state.worker.video_batcher
    before = batcher.batches_run

    # WHEN the same clips arrive concurrently
    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(lambda c: client.post("/encode-video", json={"frames": c}, auth=SIGNED).json(), clips))

    # THEN they ran in fewer model calls and each got its own embedding
    assert batcher.batches_run - before < len(clips)
    for solo, batched in zip(alone, together, strict=True):
        assert np.allclose(solo, batched["embedding"], atol=1e-4)


def signed_headers(body: bytes, *, path: str = "/encode-text", at: float | None = None, nonce: str = "") -> dict:
    """Headers of a request signed by hand (a fresh nonce unless one is given)."""
    import secrets as random

    timestamp = str(int(time.time() if at is None else at))
    nonce = nonce or random.token_hex(16)
    signature = request_signature(TOKEN, "POST", path, timestamp, nonce, body)
    return {
        TIMESTAMP_HEADER: timestamp,
        NONCE_HEADER: nonce,
        SIGNATURE_HEADER: signature,
        "Content-Type": "application/json",
    }


BODY = b'{"text": "a dog"}'


@pytest.mark.parametrize(
    "headers",
    [{}, {"X-Worker-Token": TOKEN}, {"Authorization": f"Bearer {TOKEN}"}],
    ids=["unsigned", "the-old-token-header", "the-old-bearer"],
)
def test_unsigned_requests_are_401_even_with_the_key_as_a_bearer_fails_on_todays_code(client, headers):
    # Before issue 64 the key itself travelled as a bearer token (in clear) and was enough.
    assert client.post("/encode-text", json={"text": "a dog"}, headers=headers).status_code == 401
    assert client.post("/encode-video", json={"frames": clip(1)}, headers=headers).status_code == 401


def test_a_signed_request_passes_and_its_answer_is_signed_over_it(client):
    headers = signed_headers(BODY)
    response = client.post("/encode-text", content=BODY, headers=headers)
    assert response.status_code == 200
    expected = response_signature(TOKEN, headers[SIGNATURE_HEADER], 200, response.content)
    assert response.headers[RESPONSE_SIGNATURE_HEADER] == expected


def test_a_stale_or_future_request_is_401_fails_on_todays_code(client):
    for at in (time.time() - 61, time.time() + 61):
        assert client.post("/encode-text", content=BODY, headers=signed_headers(BODY, at=at)).status_code == 401
    # AND the same request signed now passes (the key, not the clock, was what was missing)
    assert client.post("/encode-text", content=BODY, headers=signed_headers(BODY)).status_code == 200


def test_a_replayed_request_is_401_fails_on_todays_code(client):
    headers = signed_headers(BODY)
    assert client.post("/encode-text", content=BODY, headers=headers).status_code == 200
    # WHEN the same signed request is sent again within the window THEN it is refused
    assert client.post("/encode-text", content=BODY, headers=headers).status_code == 401


def test_a_body_or_path_tampered_request_is_401_fails_on_todays_code(client):
    headers = signed_headers(BODY)
    assert client.post("/encode-text", content=b'{"text": "a cat"}', headers=headers).status_code == 401
    moved = signed_headers(BODY, path="/encode-video")
    assert client.post("/encode-text", content=BODY, headers=moved).status_code == 401
    wrong_key = {**signed_headers(BODY), SIGNATURE_HEADER: "0" * 64}
    assert client.post("/encode-text", content=BODY, headers=wrong_key).status_code == 401
    # AND the untouched request passes: only the signature over what was sent admits it
    assert client.post("/encode-text", content=BODY, headers=headers).status_code == 200


def test_the_signer_rejects_an_unsigned_or_tampered_answer_fails_on_todays_code():
    # GIVEN a "worker" that answers 200 without (or with a wrong) signature, e.g. whoever holds its address
    import httpx

    for signature in (None, "0" * 64):

        def handler(request: httpx.Request, signature: str | None = signature) -> httpx.Response:
            assert request.headers[SIGNATURE_HEADER]  # the request went out signed, the key did not
            assert TOKEN not in str(request.headers)
            headers = {} if signature is None else {RESPONSE_SIGNATURE_HEADER: signature}
            return httpx.Response(200, json={"embedding": [0.0]}, headers=headers)

        signer = WorkerSigner(lambda: TOKEN)  # what GpuWorkerClient sends with
        # THEN the answer is never used
        with (
            httpx.Client(transport=httpx.MockTransport(handler), auth=signer) as http,
            pytest.raises(UnsignedWorkerResponse),
        ):
            http.post("http://worker/encode-text", json={"text": "a dog"})


def test_a_worker_without_a_key_rejects_every_call_unless_told_it_is_alone(model_dir):
    from gpu_worker.app import create_app

    with TestClient(create_app(worker_settings(model_dir, token=None))) as bare:
        assert bare.post("/encode-text", content=BODY, headers=signed_headers(BODY)).status_code == 401
    loopback = worker_settings(model_dir, token=None, allow_unauthenticated=True)
    with TestClient(create_app(loopback)) as alone:
        wait_ready(alone)
        assert alone.post("/encode-text", json={"text": "a dog"}).status_code == 200


def test_encode_video_with_more_frames_than_the_limit_is_422(client):
    response = client.post("/encode-video", json={"frames": clip(17)}, auth=SIGNED)
    assert response.status_code == 422
    assert "at most 16" in response.json()["detail"]


def test_encode_video_with_no_frames_is_422(client):
    assert client.post("/encode-video", json={"frames": []}, auth=SIGNED).status_code == 422


def test_request_body_over_the_size_limit_is_413(client):
    huge = "A" * (600 * 1024)
    response = client.post("/encode-video", json={"frames": [huge]})
    assert response.status_code == 413
    # AND a signed caller gets the refusal (unsigned: refused before the body, so the signature, is read)
    with pytest.raises(UnsignedWorkerResponse) as refused:
        client.post("/encode-video", json={"frames": [huge]}, auth=SIGNED)
    assert refused.value.status == 413


def test_encode_text_over_the_length_limit_is_422(client):
    response = client.post("/encode-text", json={"text": "x" * 5000}, auth=SIGNED)
    assert response.status_code == 422


@pytest.mark.parametrize(
    "frame",
    ["not base64 at all!", b64(b"definitely not an image")],
    ids=["bad-base64", "undecodable"],
)
def test_encode_video_with_a_bad_frame_is_400_naming_it(client, frame):
    response = client.post("/encode-video", json={"frames": [clip(1)[0], frame]}, auth=SIGNED)
    assert response.status_code == 400
    assert "frame 1" in response.json()["detail"]


def test_chat_completions_answers_in_openai_shape_with_an_image_part(client):
    body = {
        "model": "anything",
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in the picture?"},
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + clip(1)[0]}},
                ],
            },
        ],
        "max_completion_tokens": 4,
        "reasoning_effort": "low",
    }
    response = client.post("/v1/chat/completions", json=body, auth=SIGNED)

    assert response.status_code == 200
    answer = response.json()
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert isinstance(answer["choices"][0]["message"]["content"], str)
    assert answer["usage"]["completion_tokens"] <= 4
    assert answer["usage"]["total_tokens"] == answer["usage"]["prompt_tokens"] + answer["usage"]["completion_tokens"]


def test_chat_completions_through_the_openai_sdk(client):
    # GIVEN the OpenAI SDK pointed at the worker (what the LLM port's "gpu" provider does)
    from openai import OpenAI

    client.auth = SIGNED  # as worldmm.llm.client's signed HTTP client does
    try:
        sdk = OpenAI(base_url=f"{client.base_url}/v1", api_key="signed-requests", http_client=client)
        # WHEN it asks a text-only question THEN it parses the worker's (signed) answer
        completion = sdk.chat.completions.create(
            model="gpu", messages=[{"role": "user", "content": "hello"}], max_tokens=3
        )
    finally:
        client.auth = None
    assert completion.choices[0].message.role == "assistant"
    assert completion.usage is not None and completion.usage.completion_tokens <= 3


def test_chat_completions_rejects_remote_image_urls(client):
    body = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "http://example.com/a.jpg"}}],
            }
        ]
    }
    assert client.post("/v1/chat/completions", json=body, auth=SIGNED).status_code == 400


def test_video_patches_follow_the_qwen2vl_layout():
    from PIL import Image

    from gpu_worker.model import PatchConfig, frames_to_patches

    frames = [Image.new("RGB", (56, 56), (i * 20, 0, 0)) for i in range(5)]
    flat, grid = frames_to_patches(frames, PatchConfig(), 56 * 56, 56 * 56)

    # 5 frames pad to 6 → 3 temporal patches; 56x56 → 4x4 patches of 14; each 3*2*14*14 values
    assert grid == (3, 4, 4)
    assert flat.shape == (3 * 4 * 4, 3 * 2 * 14 * 14)
    # the padded 6th frame repeats the 5th: last temporal patch has identical halves
    last = flat[-1].reshape(3, 2, 14, 14)
    assert np.array_equal(last[:, 0], last[:, 1])


def test_last_token_pooling_handles_left_and_right_padding():
    import torch

    from gpu_worker.model import last_token_pool

    hidden = torch.arange(2 * 3 * 1, dtype=torch.float32).reshape(2, 3, 1)
    left = torch.tensor([[0, 1, 1], [1, 1, 1]])
    right = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert last_token_pool(hidden, left).flatten().tolist() == [2.0, 5.0]
    assert last_token_pool(hidden, right).flatten().tolist() == [1.0, 5.0]


def test_embedder_prompts_are_the_vlm2vec_instructions_and_dimension_rules(model_dir):
    from gpu_worker.model import VLM2VecEmbedder

    native = VLM2VecEmbedder.load(worker_settings(model_dir, embedding_dim=None))
    assert native.dim == 32
    assert native.video_prompt(2) == "<|video_pad|><|video_pad|> Understand the content of the provided video."
    assert native.text_prompt("a dog") == "Find a video that contains the following visual content: a dog"
    with pytest.raises(ValueError, match="smaller than embedding_dim"):
        VLM2VecEmbedder(
            native.model,
            native.tokenizer,
            native.image_processor,
            "cpu",
            worker_settings(model_dir, embedding_dim=64),
        )
