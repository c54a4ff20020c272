"""What a wearer changes in their memory: entity corrections' lock and the graph generations they bump."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended('worldmm-entity-corrections:' || :user_id, 0))"
_BUMP_GRAPHS_SQL = """
UPDATE worldmm_graph_generations SET generation = nextval('worldmm_graph_generation_seq') WHERE user_id = :user_id
"""


def lock_corrections(session: Session, user_id: str) -> None:
    """Take the user's entity-corrections advisory lock until the transaction ends."""
    session.execute(text(_LOCK_SQL), {"user_id": user_id})


def bump_graph_generations(session: Session, user_id: str) -> None:
    """Give every graph of the user a new generation (a process without Redis then rebuilds them)."""
    session.execute(text(_BUMP_GRAPHS_SQL), {"user_id": user_id})
