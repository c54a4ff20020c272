"""Forget-me's queries: a user's sessions, every table holding their id, the erase of their rows, the audit row."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

FORGET_AUDIT_TABLE = "worldmm_forget_audit"
"""The table of forget-me's audit rows, one a request (the application role may append, not read)."""

_AUDIT_SQL = (
    f"INSERT INTO {FORGET_AUDIT_TABLE} "
    "(user_hash, requested_by, started_at, finished_at, complete, deleted, error) "
    "VALUES (:h, :by, :started, :finished, :complete, CAST(:deleted AS jsonb), :error)"
)


def segment_session_ids(session: Session, user_id: str) -> set[str]:
    """The sessions of the user's segments (scoped by user_id as well as by row-level security)."""
    rows = session.execute(
        text("SELECT DISTINCT session_id FROM worldmm_segments WHERE user_id = :user_id"), {"user_id": user_id}
    ).scalars()
    return {str(r) for r in rows}


def user_table_names(session: Session) -> set[str]:
    """Every base table of the schema with a `user_id` column."""
    return set(
        session.execute(
            text(
                "SELECT c.table_name FROM information_schema.columns c "
                "JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
                "WHERE c.table_schema = current_schema() AND c.column_name = 'user_id' "
                "AND t.table_type = 'BASE TABLE'"
            )
        ).scalars()
    )


def delete_user_rows(session: Session, table: str, user_id: str) -> int:
    """Delete the user's rows of `table` (a name from the schema itself); the number deleted."""
    # The user is a bound parameter, and row-level security limits the statement to the user's rows whatever
    # it says.
    result = session.execute(text(f'DELETE FROM "{table}" WHERE user_id = :u'), {"u": user_id})
    return int(getattr(result, "rowcount", 0) or 0)


def insert_forget_audit(
    session: Session,
    *,
    user_hash: str,
    requested_by: str,
    started_at: datetime,
    finished_at: datetime,
    complete: bool,
    deleted_json: str,
    error: str | None,
) -> None:
    """Append one row to `worldmm_forget_audit`: the user's hash, who asked, when, the counts, any error."""
    session.execute(
        text(_AUDIT_SQL),
        {
            "h": user_hash,
            "by": requested_by,
            "started": started_at,
            "finished": finished_at,
            "complete": complete,
            "deleted": deleted_json,
            "error": error,
        },
    )
