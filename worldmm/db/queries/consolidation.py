"""Semantic consolidation's queries: a new fact's similar valid facts, and the per-user lock."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.orm import Session

from worldmm.db.queries import vector_literal

CANDIDATES_SQL = """
SELECT t.id,
       coalesce(s.canonical_name, s.surface_form) AS subject,
       t.predicate,
       coalesce(o.canonical_name, o.surface_form, t.object_literal) AS object,
       1 - (t.embedding <=> CAST(:embedding AS halfvec)) AS similarity
FROM worldmm_triples t
JOIN worldmm_entities s ON s.id = t.subject_entity_id
LEFT JOIN worldmm_entities o ON o.id = t.object_entity_id
WHERE t.user_id = :user_id
  AND t.memory_type = 'semantic'
  AND t.invalidated_at IS NULL
  AND t.embedding IS NOT NULL
  AND 1 - (t.embedding <=> CAST(:embedding AS halfvec)) >= :threshold
ORDER BY t.embedding <=> CAST(:embedding AS halfvec), t.id
LIMIT :k
"""

_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"


def semantic_candidates(
    session: Session, user_id: str, embedding: list[float], *, threshold: float, k: int
) -> Sequence[Row[Any]]:
    """The user's valid semantic triples at cosine similarity ≥ `threshold`, nearest first: id, subject,
    predicate, object, similarity."""
    params = {"embedding": vector_literal(embedding), "user_id": user_id, "threshold": threshold, "k": k}
    return session.execute(text(CANDIDATES_SQL), params).all()


def lock_consolidation(session: Session, user_id: str) -> None:
    """Take the user's consolidation advisory lock until the transaction ends."""
    session.execute(text(_LOCK_SQL), {"k": f"consolidate:{user_id}"})
