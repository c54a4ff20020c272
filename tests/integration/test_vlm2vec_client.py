"""VLM2VecClient and the worker health helpers against the real worker app served by uvicorn."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.gpu_worker import TOKEN, build_tiny_qwen2vl, gated_loader, jpeg_bytes, worker_settings
from tests.support.harness import make_settings
from worldmm.errors import GpuRequestError, GpuUnavailableError
from worldmm.gpu.settings import GpuClientSettings
from worldmm.memory.visual.port import UnavailableVisualEncoder
from worldmm.memory.visual.vlm2vec import VLM2VecClient, build_visual_encoder

pytestmark = pytest.mark.integration


@contextmanager
def serve(app) -> Iterator[str]:
    """Run `app` with uvicorn on an ephemeral 127.0.0.1 port in a thread; yields its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise AssertionError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sleeps(list):
    """Records the back-off sleeps instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-qwen2vl"))


@pytest.fixture(scope="module")
def worker_url(model_dir) -> Iterator[str]:
    from gpu_worker.app import create_app
    from worldmm.gpu.client import worker_ready

    with serve(create_app(worker_settings(model_dir))) as url:
        deadline = time.monotonic() + 60
        while not worker_ready(url, GpuClientSettings.of(make_settings())):
            assert time.monotonic() < deadline, "worker never became ready"
            time.sleep(0.05)
        yield url


def client_for(url: str | None, **overrides) -> tuple[VLM2VecClient, Sleeps]:
    sleeps = Sleeps()
    settings = make_settings(gpu_worker_url=url, gpu_worker_token=TOKEN, **overrides)
    return VLM2VecClient(lambda: url, settings, sleep=sleeps), sleeps


def test_vlm2vec_client_encode_video_returns_a_unit_vector_of_the_configured_dim(worker_url):
    client, _ = client_for(worker_url)

    vector = client.encode_video([jpeg_bytes(i) for i in range(16)])

    assert len(vector) == client.settings.visual_embedding_dim
    assert sum(x * x for x in vector) == pytest.approx(1.0, abs=1e-5)
    assert client.model_id == "tiny-qwen2vl"


def test_vlm2vec_client_encode_text_returns_a_vector_in_the_same_space(worker_url):
    client, _ = client_for(worker_url)

    query = client.encode_text("someone opens the fridge")
    clip = client.encode_video([jpeg_bytes(1), jpeg_bytes(2)])

    assert len(query) == len(clip) == client.settings.visual_embedding_dim


def test_vlm2vec_client_nothing_listening_raises_gpu_unavailable_after_retries():
    # GIVEN a 127.0.0.1 port nobody listens on
    client, sleeps = client_for(f"http://127.0.0.1:{free_port()}", gpu_retries=2)

    with pytest.raises(GpuUnavailableError):
        client.encode_text("anything")

    # THEN it tried 3 times with growing back-off
    assert sleeps == [0.5, 1.0]


def test_vlm2vec_client_no_worker_sentinel_raises_gpu_unavailable_without_calling():
    client, sleeps = client_for("http://0.0.0.0:8000")
    with pytest.raises(GpuUnavailableError) as info:
        client.encode_video([jpeg_bytes(0)])
    assert info.value.sentinel == "0.0.0.0" and sleeps == []

    unresolved = VLM2VecClient(lambda: None, make_settings())
    with pytest.raises(GpuUnavailableError):
        unresolved.encode_text("x")


def test_vlm2vec_client_read_timeout_raises_gpu_unavailable():
    # GIVEN a server that accepts connections and never answers
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        client, sleeps = client_for(url, gpu_read_timeout_s=0.3)

        started = time.monotonic()
        with pytest.raises(GpuUnavailableError, match="timed out"):
            client.encode_text("anything")

    # THEN it gave up after one read timeout (a slow worker is not hammered with retries)
    assert time.monotonic() - started < 5 and sleeps == []


def test_vlm2vec_client_wrong_token_raises_gpu_request_error(worker_url):
    sleeps = Sleeps()
    settings = make_settings(gpu_worker_url=worker_url, gpu_worker_token="wrong")
    client = VLM2VecClient(lambda: worker_url, settings, sleep=sleeps)

    with pytest.raises(GpuRequestError, match="401"):
        client.encode_text("anything")
    assert sleeps == []


def test_vlm2vec_client_too_many_frames_raises_gpu_request_error(worker_url):
    client, sleeps = client_for(worker_url)
    with pytest.raises(GpuRequestError, match="422"):
        client.encode_video([jpeg_bytes(0)] * 17)
    assert sleeps == []


def test_vlm2vec_client_bad_image_raises_gpu_request_error(worker_url):
    client, _ = client_for(worker_url)
    with pytest.raises(GpuRequestError, match="frame 0"):
        client.encode_video([b"not a jpeg"])


def test_vlm2vec_client_dimension_mismatch_is_a_model_output_error(worker_url):
    from worldmm.errors import ModelOutputError

    client, _ = client_for(worker_url, visual_embedding_dim=16)
    with pytest.raises(ModelOutputError, match="expected VISUAL_EMBEDDING_DIM=16"):
        client.encode_text("a dog")


def test_worker_ready_is_false_while_loading_and_client_retries_503_then_gives_up(model_dir):
    from gpu_worker.app import create_app
    from worldmm.gpu.client import worker_health, worker_ready

    gate = threading.Event()
    with serve(create_app(worker_settings(model_dir), loader=gated_loader(gate))) as url:
        whole = make_settings(gpu_worker_token=TOKEN)
        settings = GpuClientSettings.of(whole)
        # WHEN the worker is still loading
        assert worker_health(url, settings)["status"] == "loading"
        assert worker_ready(url, settings) is False
        client, sleeps = client_for(url, gpu_retries=2)
        with pytest.raises(GpuUnavailableError, match="503"):
            client.encode_text("anything")
        assert len(sleeps) == 2  # 503 is transient: retried

        # WHEN loading finishes THEN it is ready and encodes
        gate.set()
        deadline = time.monotonic() + 60
        while not worker_ready(url, settings):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert len(client.encode_text("anything")) == whole.visual_embedding_dim


def test_worker_ready_is_false_when_nothing_listens():
    from worldmm.gpu.client import worker_ready

    assert worker_ready(f"http://127.0.0.1:{free_port()}", GpuClientSettings.of(make_settings())) is False
    assert worker_ready(None, GpuClientSettings.of(make_settings())) is False


def test_build_visual_encoder_is_unavailable_without_a_worker_and_a_client_with_one():
    local = build_visual_encoder(make_settings(gpu_worker_url=None), gpu_url=lambda: None)
    assert isinstance(local, UnavailableVisualEncoder)
    assert "GPU_WORKER_URL" in local.reason

    configured = build_visual_encoder(
        make_settings(gpu_worker_url="http://127.0.0.1:9"), gpu_url=lambda: "http://127.0.0.1:9"
    )
    assert isinstance(configured, VLM2VecClient)
