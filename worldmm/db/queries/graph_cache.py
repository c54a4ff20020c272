"""The graph cache's revalidation read: the generation PostgreSQL holds for one of a user's graphs."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

_GENERATION_SQL = (
    "SELECT generation FROM worldmm_graph_generations WHERE user_id = :user_id "
    "AND memory_type = CAST(:memory_type AS worldmm_memory_type) AND scale = :scale"
)


def graph_generation(session: Session, user_id: str, memory_type: str, scale: int) -> int:
    """The generation of the user's `memory_type` graph at `scale` (0 before its first triple write)."""
    params = {"user_id": user_id, "memory_type": memory_type, "scale": scale}
    value = session.execute(text(_GENERATION_SQL), params).scalar_one_or_none()
    return int(value or 0)
