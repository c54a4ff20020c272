"""Configuration of the GPU worker process (its own settings: it ships without the worldmm library)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

# qwen-vl-utils' per-frame pixel floor for videos, and the ceiling the VLM2Vec authors pass for clips.
VIDEO_MIN_PIXELS = 128 * 28 * 28
VIDEO_MAX_PIXELS = 360 * 420


class WorkerSettings(BaseSettings):
    """Knobs of the worker; environment names are `WORKER_<FIELD>` (the token also reads GPU_WORKER_TOKEN)."""

    model_config = SettingsConfigDict(env_prefix="WORKER_", case_sensitive=False, extra="ignore")

    model_dir: Path | None = Field(
        default=None, description="VLM2Vec-V2 weights (a Qwen2-VL checkpoint dir)."
    )
    model_id: str = Field(default="VLM2Vec/VLM2Vec-V2.0", description="Name reported with every embedding.")
    generation_model_dir: Path | None = Field(
        default=None, description="Generative model for /v1/chat/completions (VLM or causal LM); unset: off."
    )
    generation_model_id: str | None = None
    token: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("WORKER_TOKEN", "GPU_WORKER_TOKEN", "token")
    )
    allow_unauthenticated: bool = Field(
        default=False, description="Only for a worker bound to localhost; without a token every call is 401."
    )
    embedding_dim: int | None = Field(
        default=1536, description="Output dimension; None keeps the backbone's hidden size."
    )
    max_frames: int = 32
    max_request_bytes: int = 32 * 1024 * 1024
    max_text_chars: int = 4000
    max_image_pixels: int = 4096 * 4096
    batch_size: int = 8
    batch_wait_ms: float = 5.0
    device: str = Field(default="auto", description="'auto' (cuda when present), 'cuda', 'cuda:1', 'cpu'.")
    dtype: str = Field(
        default="auto", description="'auto' (bfloat16 on cuda, float32 on cpu) or a torch dtype."
    )
    attn_implementation: str | None = Field(default=None, description="e.g. 'flash_attention_2', 'sdpa'.")
    video_min_pixels: int = VIDEO_MIN_PIXELS
    video_max_pixels: int = VIDEO_MAX_PIXELS
    image_min_pixels: int | None = None
    image_max_pixels: int | None = 1280 * 28 * 28
    # MMEB-V2 text-to-video retrieval instructions (MSR-VTT / DiDeMo / MSVD) used by the authors.
    video_instruction: str = "Understand the content of the provided video."
    text_instruction: str = "Find a video that contains the following visual content:"
    max_new_tokens: int = 2048
