"""The evaluation's queries: a benchmark user's stored windows and their caption embeddings."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.orm import Session

_WINDOWS_SQL = """
SELECT id, session_id, window_index, caption_embedding::text AS embedding
FROM worldmm_segments
WHERE user_id = :user_id AND duration_seconds = :duration
"""


@dataclass(frozen=True)
class StoredWindowRow:
    """One stored window of a benchmark: its segment id, where it is, and its caption embedding's text form."""

    id: uuid.UUID
    session_id: str
    window_index: int
    embedding: str | None


def windows_of_duration(session: Session, user_id: str, duration: int) -> list[StoredWindowRow]:
    """Every segment of `user_id` lasting `duration` seconds, with its caption embedding (pgvector text)."""
    rows = session.execute(text(_WINDOWS_SQL), {"user_id": user_id, "duration": duration})
    return [StoredWindowRow(r.id, r.session_id, r.window_index, r.embedding) for r in rows]
