"""The orphan reaper's cross-user reads, through SECURITY DEFINER functions that return windows' keys only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.orm import Session

_STALE_SQL = "SELECT * FROM worldmm_stale_pending_windows(make_interval(secs => :secs), :max_rows)"
_STALE_SUMMARIES_SQL = "SELECT * FROM worldmm_stale_summary_windows(make_interval(secs => :secs), :max_rows)"
_CLAIMED_SQL = "SELECT * FROM worldmm_claimed_windows(:max_rows)"


def stale_pending_windows(session: Session, older_than_s: int, max_rows: int) -> Sequence[Row[Any]]:
    """Every user's non-complete 30 s windows untouched for `older_than_s` s, oldest first (window keys)."""
    return session.execute(text(_STALE_SQL), {"secs": older_than_s, "max_rows": max_rows}).all()


def stale_summary_windows(session: Session, older_than_s: int, max_rows: int) -> Sequence[Row[Any]]:
    """A complete window under each summary left pending or failed for `older_than_s` s, of every user."""
    return session.execute(text(_STALE_SUMMARIES_SQL), {"secs": older_than_s, "max_rows": max_rows}).all()


def claimed_windows(session: Session, max_rows: int) -> Sequence[Row[Any]]:
    """Every user's pending windows that name a claiming process, oldest first (window keys and claim_owner)."""
    return session.execute(text(_CLAIMED_SQL), {"max_rows": max_rows}).all()
