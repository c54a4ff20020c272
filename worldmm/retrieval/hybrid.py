"""Hybrid segment search (spec 002 "Layer 6"): full text + vector + graph, fused, decayed, diversified.

Three ranked lists — PostgreSQL full text (`ts_rank_cd` over the segment's tsvector), cosine over
caption embeddings, and a graph (PPR) ranking when the caller has one — are fused by Reciprocal
Rank Fusion, scaled by temporal decay (coarse summaries keep a floor: they are long-lived), and
diversified by Maximal Marginal Relevance. It generates candidates and is the fallback when a graph
or a model is missing.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import text

from worldmm.db.queries import vector_literal
from worldmm.memory.episodic.segment_text import segment_memory_text
from worldmm.retrieval.models import MemoryKind, RetrievalResult, RetrievedMemory

if TYPE_CHECKING:
    from worldmm.services import Services

K = TypeVar("K", bound=Hashable)

EVERGREEN_MIN_SECONDS = 3600  # 1 h summaries summarise a stretch of life; they decay to the floor only
MMR_POOL = 20  # spec 002: candidate pool capped at 20 to bound the O(K^2) MMR cost
_WORD = re.compile(r"[A-Za-z0-9']+")

_FULL_TEXT_SQL = """
SELECT s.id
FROM worldmm_segments s, websearch_to_tsquery('english', :query) q
WHERE s.user_id = :user_id AND s.search_tsv @@ q AND s.duration_seconds = ANY(:durations)
ORDER BY ts_rank_cd(s.search_tsv, q) DESC, s.end_time DESC
LIMIT :pool
"""

# Exact per-user scan: a filtered HNSW scan can stop before it finds `pool` of this user's rows.
_VECTOR_SQL = """
WITH candidates AS MATERIALIZED (
    SELECT s.id, s.caption_embedding <=> CAST(:embedding AS vector) AS distance
    FROM worldmm_segments s
    WHERE s.user_id = :user_id AND s.caption_embedding IS NOT NULL AND s.duration_seconds = ANY(:durations)
)
SELECT id FROM candidates ORDER BY distance, id LIMIT :pool
"""

_ROWS_SQL = """
SELECT s.id, s.caption, s.transcript, s.start_time, s.end_time, s.duration_seconds,
       s.caption_embedding::text AS embedding
FROM worldmm_segments s
WHERE s.user_id = :user_id AND s.id = ANY(:ids)
"""


@dataclass(frozen=True)
class SegmentRow:
    """What fusion needs of a candidate segment."""

    id: uuid.UUID
    text: str
    start_time: datetime
    end_time: datetime
    duration_seconds: int
    embedding: list[float] | None


def rrf_fuse(ranked_lists: Sequence[Sequence[K]], k: int) -> dict[K, float]:
    """Reciprocal Rank Fusion: score(item) = Σ 1 / (k + rank), ranks from 1, over the lists holding it."""
    scores: dict[K, float] = {}
    for ranking in ranked_lists:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return scores


def decay_factor(age_days: float, half_life_days: float, floor: float | None = None) -> float:
    """2^(-age / half-life), never below `floor` when given (long-lived memories); future ages count as 0."""
    factor = 2.0 ** (-max(0.0, age_days) / half_life_days)
    return max(floor, factor) if floor is not None else factor


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _jaccard(a: str, b: str) -> float:
    wa = {w.lower() for w in _WORD.findall(a)}
    wb = {w.lower() for w in _WORD.findall(b)}
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def mmr_select(
    relevance: dict[K, float],
    similarity: Any,
    lam: float,
    k: int,
) -> list[K]:
    """Maximal Marginal Relevance: greedily pick λ·rel − (1−λ)·max sim to the picked, rel scaled to [0, 1].

    `similarity(a, b)` gives the similarity of two items in [0, 1].
    """
    if not relevance or k <= 0:
        return []
    top = max(relevance.values()) or 1.0
    remaining = sorted(relevance, key=lambda item: -relevance[item])[:MMR_POOL]
    chosen: list[K] = []
    while remaining and len(chosen) < k:
        best = max(
            remaining,
            key=lambda item: (
                lam * relevance[item] / top - (1 - lam) * max((similarity(item, c) for c in chosen), default=0.0)
            ),
        )
        chosen.append(best)
        remaining.remove(best)
    return chosen


def _or_query(query: str) -> str:
    """websearch syntax OR-ing the question's words: a question rarely shares all words with a caption."""
    words = _WORD.findall(query)
    return " or ".join(words)


def _parse_vector(value: str | None) -> list[float] | None:
    if not value:
        return None
    return [float(x) for x in value.strip("[]").split(",")]


def hybrid_search(
    services: Services,
    user_id: str,
    query: str,
    *,
    now: datetime | None = None,
    limit: int | None = None,
    graph_ranking: Sequence[uuid.UUID] = (),
    durations: Sequence[int] | None = None,
    reason: str | None = None,
) -> RetrievalResult:
    """Segments for `query` by fused full-text, vector and graph rankings, decayed and diversified."""
    settings = services.settings
    now = now or datetime.now(UTC)
    limit = limit or settings.hybrid_top_k
    scales = list(durations or settings.scale_durations)
    pool = max(MMR_POOL, limit)
    [query_embedding] = services.embedder.embed([query])
    or_query = _or_query(query)

    with services.db.unit_of_work(user_id) as session:
        full_text: list[uuid.UUID] = []
        if or_query:
            full_text = list(
                session.execute(
                    text(_FULL_TEXT_SQL),
                    {"query": or_query, "user_id": user_id, "durations": scales, "pool": pool},
                ).scalars()
            )
        vector = list(
            session.execute(
                text(_VECTOR_SQL),
                {
                    "embedding": vector_literal(query_embedding),
                    "user_id": user_id,
                    "durations": scales,
                    "pool": pool,
                },
            ).scalars()
        )
        graph = list(graph_ranking)[:pool]
        fused = rrf_fuse([full_text, vector, graph], settings.rrf_k)
        rows = {
            r.id: SegmentRow(
                id=r.id,
                text=segment_memory_text(r.caption, r.transcript),
                start_time=r.start_time,
                end_time=r.end_time,
                duration_seconds=r.duration_seconds,
                embedding=_parse_vector(r.embedding),
            )
            for r in session.execute(text(_ROWS_SQL), {"user_id": user_id, "ids": list(fused)})
        }

    relevance: dict[uuid.UUID, float] = {}
    for segment_id, score in fused.items():
        row = rows.get(segment_id)
        if row is None or not row.text:
            continue
        age_days = (now - row.end_time).total_seconds() / 86_400
        floor = settings.decay_floor if row.duration_seconds >= EVERGREEN_MIN_SECONDS else None
        relevance[segment_id] = score * decay_factor(age_days, settings.decay_half_life_days, floor)

    def similarity(a: uuid.UUID, b: uuid.UUID) -> float:
        ra, rb = rows[a], rows[b]
        if ra.embedding is not None and rb.embedding is not None:
            return max(0.0, _cosine(ra.embedding, rb.embedding))
        return _jaccard(ra.text, rb.text)

    chosen = mmr_select(relevance, similarity, settings.mmr_lambda, limit)
    items = [
        RetrievedMemory(
            id=str(segment_id),
            memory_type=MemoryKind.EPISODIC,
            text=rows[segment_id].text,
            score=relevance[segment_id],
            source="hybrid",
            start_time=rows[segment_id].start_time,
            end_time=rows[segment_id].end_time,
            duration_seconds=rows[segment_id].duration_seconds,
            segment_id=str(segment_id),
        )
        for segment_id in chosen
    ]
    if not items and reason is None:
        reason = "no matching memories"
    return RetrievalResult(memory_type=MemoryKind.EPISODIC, query=query, items=items, reason=reason)
