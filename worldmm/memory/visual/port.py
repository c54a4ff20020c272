"""The visual encoder port: VLM2Vec clip and query embeddings in one space."""

from __future__ import annotations

from typing import Protocol


class VisualEncoder(Protocol):
    """Encodes a clip's frames and a query text into the same embedding space."""

    model_id: str

    def encode_video(self, frames: list[bytes]) -> list[float]:
        """One L2-normalised embedding for the clip (raises GpuUnavailableError / GpuRequestError)."""
        ...

    def encode_text(self, text: str) -> list[float]: ...


class UnavailableVisualEncoder:
    """No visual encoder configured: every call raises UnavailableError with the reason."""

    model_id = "unavailable"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def encode_video(self, frames: list[bytes]) -> list[float]:
        from worldmm.errors import UnavailableError

        raise UnavailableError(self.reason)

    def encode_text(self, text: str) -> list[float]:
        from worldmm.errors import UnavailableError

        raise UnavailableError(self.reason)
