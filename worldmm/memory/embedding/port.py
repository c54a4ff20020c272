"""The text embedder port (entity resolution, triple similarity, caption search)."""

from __future__ import annotations

import threading
from typing import Any, Protocol


class TextEmbedder(Protocol):
    """Text → unit-length vectors of a fixed dimension."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> list[list[float]]: ...


class CachingEmbedder:
    """A TextEmbedder that embeds each distinct text once: repeated texts in a batch or across calls
    (the same fact in a window and its summaries) reuse the vector. Bounded LRU, float32 storage."""

    @property
    def measures_meaning(self) -> bool:
        """Whether the wrapped embedder's cosines follow meaning (see `HashEmbedder`)."""
        return bool(getattr(self.inner, "measures_meaning", True))

    def __init__(self, inner: TextEmbedder, max_entries: int = 50_000) -> None:
        from collections import OrderedDict

        import numpy as np

        self.inner = inner
        self.max_entries = max_entries
        self._np = np
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vectors = self.inner.embed(missing)
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    self._cache[text] = self._np.asarray(vector, dtype=self._np.float32)
        with self._lock:
            found = {t: self._cache[t] for t in texts if t in self._cache}
            for text in found:
                self._cache.move_to_end(text)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        # (a text evicted between the two locks by another thread is embedded again)
        return [found[t].tolist() if t in found else self.inner.embed([t])[0] for t in texts]
