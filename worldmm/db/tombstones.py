"""Tombstones of forgotten spans: whether a window may still be written, decided under one per-user lock.

A span erase takes `lock_forgetting` (exclusive) while it writes its tombstone and deletes the span's rows; a
window claim takes it shared and checks `is_forgotten` in the same transaction. So a claim either committed
before the erase looked (its row is erased with the rest) or sees the tombstone (and writes nothing).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

_LOCK = "SELECT {fn}(hashtextextended(:k, 0))"


def _lock_key(user_id: str) -> str:
    return f"forget-span:{user_id}"


def lock_forgetting(session: Session, user_id: str) -> None:
    """Exclusive, for the rest of the transaction: no window of `user_id` is claimed meanwhile."""
    session.execute(text(_LOCK.format(fn="pg_advisory_xact_lock")), {"k": _lock_key(user_id)})


def lock_claiming(session: Session, user_id: str) -> None:
    """Shared, for the rest of the transaction: waits for a span erase of `user_id` in progress."""
    session.execute(text(_LOCK.format(fn="pg_advisory_xact_lock_shared")), {"k": _lock_key(user_id)})


def is_forgotten(session: Session, user_id: str, session_id: str, start: datetime, end: datetime) -> bool:
    """Whether `user_id` erased `session_id` or a span overlapping [start, end)."""
    return bool(
        session.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM worldmm_forgotten_spans WHERE user_id = :u AND ("
                "session_id = :s OR (session_id IS NULL AND span_start < :end AND span_end > :start)))"
            ),
            {"u": user_id, "s": session_id, "start": start, "end": end},
        ).scalar()
    )
