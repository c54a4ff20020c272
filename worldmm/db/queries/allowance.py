"""The allowance's token buckets in `worldmm_allowances` (migration 0016), one row per user."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.orm import Session

TABLE = "worldmm_allowances"

# An upsert whose update only applies when the refilled bucket holds the cost: two takes at once serialise on
# the row and never both spend the last tokens.
_TAKE = text(f"""
INSERT INTO {TABLE} AS a (user_id, tokens, updated_at) VALUES (:u, :capacity - :cost, :now)
ON CONFLICT (user_id) DO UPDATE
   SET tokens = LEAST(:capacity, a.tokens + GREATEST(0, :now - a.updated_at) * :rate) - :cost,
       updated_at = GREATEST(a.updated_at, :now)
 WHERE LEAST(:capacity, a.tokens + GREATEST(0, :now - a.updated_at) * :rate) >= :cost
RETURNING tokens
""")
_LEVEL = text(f"SELECT tokens, updated_at FROM {TABLE} WHERE user_id = :u")
_DELETE = text(f"DELETE FROM {TABLE} WHERE user_id = :u")


def take_tokens(session: Session, user_id: str, cost: float, now: float, capacity: float, rate: float) -> float | None:
    """Spend `cost` from the user's bucket refilled to `now`; the tokens left, or None when it holds too few."""
    params = {"u": user_id, "capacity": capacity, "cost": cost, "now": now, "rate": rate}
    left = session.execute(_TAKE, params).scalar_one_or_none()
    return None if left is None else float(left)


def bucket_level(session: Session, user_id: str) -> Row[Any]:
    """The user's stored bucket: tokens, updated_at (epoch seconds)."""
    return session.execute(_LEVEL, {"u": user_id}).one()


def delete_allowance(session: Session, user_id: str) -> int:
    """Delete the user's bucket; the rows deleted."""
    result = session.execute(_DELETE, {"u": user_id})
    return int(getattr(result, "rowcount", 0) or 0)
