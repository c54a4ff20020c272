"""Naive baselines measured in the same run as the project's retrievers: plain BM25, cosine, and their RRF.

They see exactly what the retrievers see — the benchmark's windows as stored, only those that end by
the time a question is asked — and nothing of the project's ranking (no stemming, no graph, no time
reference, no diversification).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy.sparse import csc_matrix, csr_matrix

from worldmm.retrieval.hybrid import rrf_fuse

_TOKEN = re.compile(r"[a-z0-9']+")
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()  # noqa: SIM905 - a word list reads better as text
)


def tokenize(text: str) -> list[str]:
    """Lower-cased words without stop words (no stemming: the plain baseline)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]


class PlainBM25:
    """Okapi BM25 (k1 1.2, b 0.75) over fixed documents; statistics over the visible ones."""

    def __init__(self, documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.vocabulary: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for row, document in enumerate(documents):
            for term, count in Counter(tokenize(document)).items():
                rows.append(row)
                cols.append(self.vocabulary.setdefault(term, len(self.vocabulary)))
                vals.append(float(count))
        matrix = csr_matrix((vals, (rows, cols)), shape=(len(documents), max(1, len(self.vocabulary))))
        self.lengths = np.asarray(matrix.sum(axis=1)).ravel()
        self.counts: csc_matrix = matrix.tocsc()

    def scores(self, query: str, visible: np.ndarray) -> np.ndarray:
        scores = np.zeros(len(self.lengths))
        n = int(visible.sum())
        if n == 0:
            return scores
        average = float(self.lengths[visible].mean()) or 1.0
        norm = self.k1 * (1 - self.b + self.b * self.lengths / average)
        for term in dict.fromkeys(tokenize(query)):
            column = self.vocabulary.get(term)
            if column is None:
                continue
            rows = self.counts.indices[self.counts.indptr[column] : self.counts.indptr[column + 1]]
            tf_all = self.counts.data[self.counts.indptr[column] : self.counts.indptr[column + 1]]
            keep = visible[rows]
            rows, tf = rows[keep], tf_all[keep]
            if rows.size == 0:
                continue
            idf = math.log(1 + (n - rows.size + 0.5) / (rows.size + 0.5))
            scores[rows] += idf * tf * (self.k1 + 1) / (tf + norm[rows])
        return scores


def top(scores: np.ndarray, visible: np.ndarray, k: int, *, positive_only: bool = False) -> list[int]:
    """Indices of the `k` best visible scores, best first (ties by position)."""
    candidates = np.flatnonzero(visible & (scores > 0)) if positive_only else np.flatnonzero(visible)
    order = np.argsort(-scores[candidates], kind="stable")[:k]
    return [int(i) for i in candidates[order]]


def rrf(rankings: Sequence[Sequence[int]], k: int = 60) -> list[int]:
    """Plain Reciprocal Rank Fusion of index lists."""
    fused = rrf_fuse(rankings, k)
    return sorted(fused, key=lambda i: (-fused[i], i))
