"""The multiscale summary schedule's lock on one summary slot."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"


def lock_summary_slot(
    session: Session, user_id: str, session_id: str, duration_seconds: int, window_index: int
) -> None:
    """Take the advisory lock of one summary slot until the transaction ends (work on the slot is serialised)."""
    name = f"multiscale:{user_id}:{session_id}:{duration_seconds}:{window_index}"
    session.execute(text(_LOCK_SQL), {"k": name})
