"""Episodic triples' writes: the batched insert, and the removal of a segment's derived rows."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Table, delete
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from worldmm.db.models import MemoryType, Triple, VisualEmbedding

_TRIPLES = cast(Table, Triple.__table__)
# One statement with the rows as parameters (sent as one multi-row insert): compiled once and cached,
# where rows inlined with .values() would be compiled anew for every call.
_INSERT_TRIPLES = insert(_TRIPLES).on_conflict_do_nothing().returning(_TRIPLES.c.id)


def insert_triple_rows(session: Session, rows: list[dict[str, Any]]) -> int:
    """Insert triple rows, skipping any already in their segment; the number added."""
    return len(session.execute(_INSERT_TRIPLES, rows).all())


def delete_episodic_derivatives(session: Session, user_id: str, segment_ids: Sequence[uuid.UUID]) -> None:
    """Delete the episodic triples and visual embeddings of the user's `segment_ids`."""
    ids = list(segment_ids)
    session.execute(
        delete(Triple).where(
            Triple.user_id == user_id, Triple.segment_id.in_(ids), Triple.memory_type == MemoryType.EPISODIC
        )
    )
    session.execute(
        delete(VisualEmbedding).where(VisualEmbedding.user_id == user_id, VisualEmbedding.segment_id.in_(ids))
    )
