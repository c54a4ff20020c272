"""Entity resolution's queries: the nearest canonical entity of each new form, the batched insert, and the
deletion of entity groups no triple names any more."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Row, Table, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from worldmm.db.models import Entity
from worldmm.db.queries import vector_literal

# For each new form, its nearest canonical entity of the user (the exact scan of NEAREST_CANONICAL_SQL, batched).
# The vectors arrive as vector[]: a text cast inside the lateral query would re-parse the form's vector for
# every row scanned (150 ms a form at 4,000 entities when stale statistics keep the HNSW index unused).
NEAREST_FOR_EACH_SQL = """
SELECT f.form, m.id, m.canonical_name, m.distance
FROM unnest(CAST(:forms AS text[]), CAST(:vectors AS halfvec[])) WITH ORDINALITY AS f(form, vec, ord)
CROSS JOIN LATERAL (
    SELECT e.id, e.canonical_name, e.embedding <=> f.vec AS distance
    FROM worldmm_entities e
    WHERE e.user_id = :user_id AND e.canonical_entity_id IS NULL AND e.embedding IS NOT NULL
    ORDER BY distance, e.id
    LIMIT 1
) m
ORDER BY f.ord
"""

_ENTITIES = cast(Table, Entity.__table__)
# Rows as parameters (one multi-row INSERT, compiled once); RETURNING names the rows this call added.
_INSERT_ENTITIES = (
    insert(_ENTITIES)
    .on_conflict_do_nothing()
    .returning(_ENTITIES.c.surface_form, _ENTITIES.c.id, _ENTITIES.c.canonical_entity_id)
)

_DELETE_UNNAMED_GROUPS = """
WITH dead AS (
    SELECT DISTINCT coalesce(e.canonical_entity_id, e.id) AS root
    FROM worldmm_entities e
    WHERE e.user_id = :u AND e.id = ANY(:c)
      AND NOT EXISTS (
        SELECT 1 FROM worldmm_entities m JOIN worldmm_triples t
          ON t.user_id = :u AND (t.subject_entity_id = m.id OR t.object_entity_id = m.id)
        WHERE m.user_id = :u AND coalesce(m.canonical_entity_id, m.id) = coalesce(e.canonical_entity_id, e.id))
)
DELETE FROM worldmm_entities e USING dead
WHERE e.user_id = :u AND coalesce(e.canonical_entity_id, e.id) = dead.root
RETURNING e.id
"""
_DELETE_ORPHAN_CORRECTIONS = """
DELETE FROM worldmm_entity_corrections c
WHERE c.user_id = :u AND (c.entity_id = ANY(:gone) OR c.target_entity_id = ANY(:gone))
"""


def nearest_canonical_for_each(
    session: Session, user_id: str, forms: list[str], vectors: list[list[float]]
) -> Sequence[Row[Any]]:
    """Per form (in order), the user's nearest canonical entity to its vector: form, id, canonical_name, distance."""
    params = {"forms": forms, "vectors": [vector_literal(v) for v in vectors], "user_id": user_id}
    return session.execute(text(NEAREST_FOR_EACH_SQL), params).all()


def insert_entity_rows(session: Session, rows: list[dict[str, Any]]) -> list[tuple[str, uuid.UUID, uuid.UUID | None]]:
    """Insert entity rows, skipping any whose form the user already has; (surface_form, id, canonical_entity_id)
    of each row added."""
    return [(form, entity_id, canonical) for form, entity_id, canonical in session.execute(_INSERT_ENTITIES, rows)]


def delete_unnamed_groups(session: Session, user_id: str, candidates: list[uuid.UUID]) -> list[uuid.UUID]:
    """Delete the entity groups of `candidates` that no triple of the user names; the ids of the rows deleted."""
    return list(session.execute(text(_DELETE_UNNAMED_GROUPS), {"u": user_id, "c": candidates}).scalars().all())


def delete_corrections_of(session: Session, user_id: str, entity_ids: list[uuid.UUID]) -> None:
    """Delete the user's entity corrections naming any of `entity_ids` (as the entity or its target)."""
    session.execute(text(_DELETE_ORPHAN_CORRECTIONS), {"u": user_id, "gone": entity_ids})
