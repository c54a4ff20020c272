"""A deterministic feature-hashing text embedder: zero latency, no model (tests and benchmarks)."""

from __future__ import annotations

import hashlib
import math
import re

_TOKEN = re.compile(r"[a-z0-9]+")


class HashEmbedder:
    """Bag of word and character-trigram hashes, L2-normalised; similar strings get similar vectors."""

    measures_meaning = False
    """Its cosines follow shared spelling, not meaning: no threshold of a sentence embedder applies."""

    def __init__(self, dim: int) -> None:
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self._dim
        lowered = text.lower()
        features = _TOKEN.findall(lowered)
        compact = f" {lowered.strip()} "
        features += [compact[i : i + 3] for i in range(max(0, len(compact) - 2))]
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self._dim
            sign = 1.0 if digest[4] & 1 else -1.0
            vec[index] += sign
        norm = math.sqrt(sum(v * v for v in vec))
        if norm == 0:
            vec[0] = 1.0
            return vec
        return [v / norm for v in vec]

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]
