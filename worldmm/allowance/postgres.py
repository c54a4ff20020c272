"""The allowance port on PostgreSQL (the local profile): `worldmm_allowances`, one row per user (migration 0016).

A take is one statement: an upsert whose update only applies when the refilled bucket holds the cost, so two
takes at once serialise on the row and never both spend the last tokens. The row is the user's own (row-level
security on `app.user_id`); forget-me's sweep of every `user_id` table erases it.
"""

from __future__ import annotations

from sqlalchemy import text

from worldmm.allowance.port import Bucket, Grant
from worldmm.db.engine import Database

TABLE = "worldmm_allowances"

_TAKE = text(f"""
INSERT INTO {TABLE} AS a (user_id, tokens, updated_at) VALUES (:u, :capacity - :cost, :now)
ON CONFLICT (user_id) DO UPDATE
   SET tokens = LEAST(:capacity, a.tokens + GREATEST(0, :now - a.updated_at) * :rate) - :cost,
       updated_at = GREATEST(a.updated_at, :now)
 WHERE LEAST(:capacity, a.tokens + GREATEST(0, :now - a.updated_at) * :rate) >= :cost
RETURNING tokens
""")
_LEVEL = text(f"SELECT tokens, updated_at FROM {TABLE} WHERE user_id = :u")


class PostgresAllowances:
    """Token buckets in the memory database, each taken in the user's own unit of work."""

    def __init__(self, db: Database, bucket: Bucket) -> None:
        self._db = db
        self._bucket = bucket

    def take(self, user_id: str, cost: float, now: float) -> Grant:
        bucket = self._bucket
        if cost > bucket.capacity:
            return Grant(False, 0.0, bucket.wait_s(0.0, cost))
        with self._db.unit_of_work(user_id) as session:
            params = {"u": user_id, "capacity": bucket.capacity, "cost": cost, "now": now, "rate": bucket.per_second}
            left = session.execute(_TAKE, params).scalar_one_or_none()
            if left is not None:
                return Grant(True, float(left))
            row = session.execute(_LEVEL, {"u": user_id}).one()
        level = bucket.level(float(row.tokens), float(row.updated_at), now)
        return Grant(False, level, bucket.wait_s(level, cost))

    def erase_user(self, user_id: str) -> dict[str, int]:
        with self._db.unit_of_work(user_id) as session:
            result = session.execute(text(f"DELETE FROM {TABLE} WHERE user_id = :u"), {"u": user_id})
            deleted = int(getattr(result, "rowcount", 0) or 0)
        return {f"postgres.{TABLE}": deleted} if deleted else {}
