"""The allowance port on PostgreSQL (the local profile): `worldmm_allowances`, one row per user (migration 0016).

A take is one statement: an upsert whose update only applies when the refilled bucket holds the cost, so two
takes at once serialise on the row and never both spend the last tokens. The row is the user's own (row-level
security on `app.user_id`); forget-me's sweep of every `user_id` table erases it.
"""

from __future__ import annotations

from worldmm.allowance.port import Bucket, Grant
from worldmm.db.engine import Database
from worldmm.db.queries.allowance import TABLE, bucket_level, delete_allowance, take_tokens


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
            left = take_tokens(session, user_id, cost, now, bucket.capacity, bucket.per_second)
            if left is not None:
                return Grant(True, left)
            row = bucket_level(session, user_id)
        level = bucket.level(float(row.tokens), float(row.updated_at), now)
        return Grant(False, level, bucket.wait_s(level, cost))

    def erase_user(self, user_id: str) -> dict[str, int]:
        with self._db.unit_of_work(user_id) as session:
            deleted = delete_allowance(session, user_id)
        return {f"postgres.{TABLE}": deleted} if deleted else {}
