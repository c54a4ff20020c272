"""Hybrid search's and the answer agent's queries: the caption-vector leg (HNSW walk or exact per-user scan),
the candidates' rows, the windows around or within a memory, and the user's newest memory."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import text
from sqlalchemy.orm import Session

from worldmm.db.queries import vector_literal

TABLE_ROWS_SQL = "SELECT reltuples::bigint FROM pg_class WHERE oid = 'worldmm_segments'::regclass"

# The user's segments of `durations` ending in (since, until], each with its cosine distance to the query:
# the caption-vector leg's candidates under either plan.
_CANDIDATES = """
    SELECT s.id, s.caption_embedding <=> CAST(:embedding AS halfvec) AS distance
    FROM worldmm_segments s
    WHERE s.user_id = :user_id AND s.caption_embedding IS NOT NULL AND s.duration_seconds = ANY(:durations)
      AND s.end_time <= :until AND (CAST(:since AS timestamptz) IS NULL OR s.end_time > :since)"""

# The HNSW index with pgvector's iterative scan (it keeps walking the graph until `pool` rows pass the
# user and time filters); the outer query restores the exact order of what it found.
VECTOR_SQL = f"""
WITH candidates AS MATERIALIZED ({_CANDIDATES}
    ORDER BY s.caption_embedding <=> CAST(:embedding AS halfvec)
    LIMIT :pool
)
SELECT id, distance FROM candidates ORDER BY distance, id
"""

HNSW_SETTINGS_SQL = (
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', :ef, true)"
)

# Exact per-user scan: used when the index walk stopped short of the rows the user has.
VECTOR_EXACT_SQL = f"""
WITH candidates AS MATERIALIZED ({_CANDIDATES}
)
SELECT id, distance FROM candidates ORDER BY distance, id LIMIT :pool
"""

_ROWS_SQL = """
SELECT s.id, s.caption, s.transcript, s.start_time, s.end_time, s.duration_seconds,
       vector_send(CAST(s.caption_embedding AS vector)) AS embedding
FROM worldmm_segments s
WHERE s.user_id = :user_id AND s.id = ANY(:ids)
"""

# The 30-second windows that touch a retrieved one (ending where it starts, starting where it ends).
_ADJACENT_SQL = """
SELECT s.id FROM worldmm_segments s
WHERE s.user_id = :user_id AND s.duration_seconds = 30 AND s.caption_embedding IS NOT NULL
  AND (s.start_time = ANY(CAST(:ends AS timestamptz[])) OR s.end_time = ANY(CAST(:starts AS timestamptz[])))
"""

# The newest 30-second windows that end in a time reference's range.
_WINDOWS_IN_SQL = """
SELECT s.id FROM worldmm_segments s
WHERE s.user_id = :user_id AND s.duration_seconds = 30 AND s.caption_embedding IS NOT NULL
  AND s.end_time <= :until AND (CAST(:since AS timestamptz) IS NULL OR s.end_time > :since)
ORDER BY s.end_time DESC LIMIT :limit
"""

# The 30-second windows a summary spans.
_WINDOWS_WITHIN_SQL = """
SELECT s.id FROM worldmm_segments s
WHERE s.user_id = :user_id AND s.duration_seconds = 30 AND s.caption_embedding IS NOT NULL
  AND s.start_time >= :since AND s.end_time <= :until
"""

_NEWEST_MEMORY_SQL = """
SELECT max(end_time) FROM worldmm_segments
WHERE user_id = :user_id AND processing_status = 'complete' AND end_time <= :asked_at
"""


@dataclass(frozen=True)
class CaptionVectorQuery:
    """The caption-vector leg's question: the `pool` segments of `user_id` nearest `embedding`, among those of
    `durations` that end in (since, until]."""

    user_id: str
    embedding: list[float]
    durations: list[int]
    until: datetime
    since: datetime | None
    pool: int

    def params(self) -> dict[str, Any]:
        return {
            "embedding": vector_literal(self.embedding),
            "user_id": self.user_id,
            "durations": self.durations,
            "until": self.until,
            "since": self.since,
            "pool": self.pool,
        }


@dataclass(frozen=True)
class VectorHit:
    """A segment the vector leg found, and its cosine distance."""

    id: uuid.UUID
    distance: float


@dataclass(frozen=True)
class CandidateRow:
    """A candidate segment's text, times and caption embedding (pgvector's binary form, or None)."""

    id: uuid.UUID
    caption: str | None
    transcript: str | None
    start_time: datetime
    end_time: datetime
    duration_seconds: int
    embedding: bytes | None


def nearest_segments_exact(session: Session, query: CaptionVectorQuery) -> list[VectorHit]:
    """The query's nearest segments by an exact scan of the user's rows, nearest first."""
    return [VectorHit(r.id, r.distance) for r in session.execute(text(VECTOR_EXACT_SQL), query.params())]


def nearest_segments_walked(session: Session, query: CaptionVectorQuery, ef_search: str) -> list[VectorHit]:
    """The query's nearest segments by walking the HNSW index (iterative scan, `ef_search` for this
    transaction), nearest first; fewer than `pool` when the walk stopped short."""
    session.execute(text(HNSW_SETTINGS_SQL), {"ef": ef_search})
    return [VectorHit(r.id, r.distance) for r in session.execute(text(VECTOR_SQL), query.params())]


def segment_table_rows(session: Session) -> int:
    """The planner's estimate of the segment table's rows (-1 when it has none)."""
    return int(session.execute(text(TABLE_ROWS_SQL)).scalar() or -1)


def candidate_rows(session: Session, user_id: str, ids: Sequence[uuid.UUID]) -> list[CandidateRow]:
    """The user's segments of `ids`, in no particular order."""
    rows = session.execute(text(_ROWS_SQL), {"user_id": user_id, "ids": list(ids)})
    return [
        CandidateRow(r.id, r.caption, r.transcript, r.start_time, r.end_time, r.duration_seconds, r.embedding)
        for r in rows
    ]


def adjacent_window_ids(
    session: Session, user_id: str, starts: list[datetime], ends: list[datetime]
) -> list[uuid.UUID]:
    """The 30-second windows (with a caption embedding) that end at one of `starts` or start at one of `ends`."""
    params = {"user_id": user_id, "starts": starts, "ends": ends}
    return list(session.execute(text(_ADJACENT_SQL), params).scalars())


def window_ids_in(
    session: Session, user_id: str, until: datetime, since: datetime | None, limit: int
) -> list[uuid.UUID]:
    """The newest `limit` 30-second windows (with a caption embedding) ending in (since, until], newest first."""
    params = {"user_id": user_id, "until": until, "since": since, "limit": limit}
    return list(session.execute(text(_WINDOWS_IN_SQL), params).scalars())


def window_ids_within(session: Session, user_id: str, since: datetime, until: datetime) -> list[uuid.UUID]:
    """The 30-second windows (with a caption embedding) lying within [since, until]."""
    params = {"user_id": user_id, "since": since, "until": until}
    return list(session.execute(text(_WINDOWS_WITHIN_SQL), params).scalars())


def newest_memory_end(session: Session, user_id: str, asked_at: datetime) -> datetime | None:
    """When the user's newest complete segment ending at or before `asked_at` ended; None when there is none."""
    newest = session.execute(text(_NEWEST_MEMORY_SQL), {"user_id": user_id, "asked_at": asked_at}).scalar()
    return cast("datetime | None", newest)
