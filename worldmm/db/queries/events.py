"""The outbox's cross-user queries, through its SECURITY DEFINER functions (migration 0019)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.orm import Session

_UNPUBLISHED_SQL = "SELECT * FROM worldmm_unpublished_events(:max_rows)"
_MARK_SQL = "SELECT worldmm_mark_events_published(CAST(:ids AS uuid[]))"
_PRUNE_SQL = "SELECT worldmm_prune_published_events(:keep_s, :max_rows)"
_AWAITING_SQL = "SELECT * FROM worldmm_sessions_awaiting_event(make_interval(secs => :secs), :max_rows)"


def unpublished_events(session: Session, max_rows: int) -> Sequence[Row[Any]]:
    """Every user's unpublished events, oldest first (the outbox's columns)."""
    return session.execute(text(_UNPUBLISHED_SQL), {"max_rows": max_rows}).all()


def mark_events_published(session: Session, ids: str) -> int:
    """Mark the events of `ids` (a PostgreSQL uuid[] literal) published; the number newly marked."""
    return int(session.execute(text(_MARK_SQL), {"ids": ids}).scalar() or 0)


def sessions_awaiting_event(session: Session, within_s: int, max_rows: int) -> Sequence[Row[Any]]:
    """(user_id, session_id) of sessions with window events in the last `within_s` s and no SessionProcessed."""
    return session.execute(text(_AWAITING_SQL), {"secs": within_s, "max_rows": max_rows}).all()


def prune_published_events(session: Session, keep_s: int, max_rows: int) -> int:
    """Delete up to `max_rows` events (every user's) published more than `keep_s` seconds ago; how many went."""
    return int(session.execute(text(_PRUNE_SQL), {"keep_s": keep_s, "max_rows": max_rows}).scalar() or 0)
