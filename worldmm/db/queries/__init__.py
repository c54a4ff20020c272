"""The data layer's named queries, one module per area; here the vector queries that must be exact per user
(filtered HNSW can silently return too few rows)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.orm import Session

# An exact scan of one user's canonical rows (index ix_entities_canonical_user): per-user entity sets
# are small, and a partial HNSW filtered by user_id may stop before it finds k of that user's rows.
NEAREST_CANONICAL_SQL = """
WITH candidates AS MATERIALIZED (
    SELECT id, canonical_name, embedding <=> CAST(:embedding AS halfvec) AS distance
    FROM worldmm_entities
    WHERE user_id = :user_id AND canonical_entity_id IS NULL AND embedding IS NOT NULL
)
SELECT id, canonical_name, distance FROM candidates ORDER BY distance, id LIMIT :k
"""


@dataclass(frozen=True)
class EntityMatch:
    id: uuid.UUID
    canonical_name: str
    distance: float

    @property
    def similarity(self) -> float:
        return 1.0 - self.distance


def vector_literal(vec: list[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(f"{v:.7g}" for v in vec) + "]"


def nearest_canonical_entities(session: Session, user_id: str, embedding: list[float], k: int) -> list[EntityMatch]:
    """The k canonical entities of `user_id` closest (cosine) to `embedding`, nearest first."""
    rows = session.execute(
        text(NEAREST_CANONICAL_SQL), {"embedding": vector_literal(embedding), "user_id": user_id, "k": k}
    )
    return [EntityMatch(r.id, r.canonical_name, float(r.distance)) for r in rows]
