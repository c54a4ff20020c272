"""The text embedder port (entity resolution, triple similarity, caption search)."""

from __future__ import annotations

from typing import Protocol


class TextEmbedder(Protocol):
    """Text → unit-length vectors of a fixed dimension."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> list[list[float]]: ...
