"""VLM2VecClient: the visual encoder port served by the GPU worker's /encode-video and /encode-text."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from worldmm.config import Profile, Settings
from worldmm.errors import BadRequest, ModelOutputError
from worldmm.gpu.client import GpuWorkerClient
from worldmm.gpu.settings import GpuClientSettings
from worldmm.memory.visual.port import UnavailableVisualEncoder, VisualEncoder

DEFAULT_MODEL_ID = "VLM2Vec/VLM2Vec-V2.0"


class VLM2VecClient:
    """Encodes clips and queries on the GPU worker; vectors are checked against the configured dimension."""

    def __init__(
        self, base_url_provider: Callable[[], str | None], settings: Settings, **client_options: Any
    ):
        self.settings = settings
        self.client = GpuWorkerClient(base_url_provider, GpuClientSettings.of(settings), **client_options)
        self.model_id = DEFAULT_MODEL_ID

    def encode_video(self, frames: list[bytes]) -> list[float]:
        """One L2-normalised embedding for the clip's frames (JPEG/PNG bytes, in time order)."""
        if not frames:
            raise BadRequest("a clip needs at least one frame")
        payload = {"frames": [base64.b64encode(frame).decode("ascii") for frame in frames]}
        body = self.client.post_json(
            "/encode-video", payload, read_timeout_s=self.settings.gpu_encode_timeout_s
        )
        return self._vector(body)

    def encode_text(self, text: str) -> list[float]:
        """The query's embedding in the clips' space."""
        if not text.strip():
            raise BadRequest("query text is empty")
        body = self.client.post_json("/encode-text", {"text": text})
        return self._vector(body)

    def _vector(self, body: Any) -> list[float]:
        embedding = body.get("embedding") if isinstance(body, dict) else None
        if not isinstance(embedding, list) or not all(isinstance(x, int | float) for x in embedding):
            raise ModelOutputError("GPU worker answered without an embedding")
        if len(embedding) != self.settings.visual_embedding_dim:
            raise ModelOutputError(
                f"GPU worker embedding has {len(embedding)} dimensions, "
                f"expected VISUAL_EMBEDDING_DIM={self.settings.visual_embedding_dim}"
            )
        model = body.get("model")
        if isinstance(model, str) and model:
            self.model_id = model
        return [float(x) for x in embedding]


def build_visual_encoder(settings: Settings, gpu_url: Callable[[], str | None]) -> VisualEncoder:
    """The GPU worker client when a worker is configured (or discoverable on aws), else unavailable."""
    if settings.gpu_worker_url or settings.worldmm_profile == Profile.AWS:
        return VLM2VecClient(gpu_url, settings)
    return UnavailableVisualEncoder("no GPU worker configured (set GPU_WORKER_URL)")
