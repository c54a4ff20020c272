"""The allowance port: one token bucket per user for the routes that call models.

A user's bucket holds up to `capacity` model calls and refills at `per_hour`; a question takes its worst case
(`worldmm.allowance.service.question_cost`) before any model is called, so what one user can make the models
do is bounded by the bucket whatever they send, and one user's empty bucket is nobody else's.

Adapters: `DynamoAllowances` (the aws profile: a conditional update per take on the allowances table) and
`PostgresAllowances` (the local profile: one upsert per take on `worldmm_allowances`, migration 0016).
tests/integration/test_allowance_contract.py is the contract both meet. Forget-me erases a user's bucket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Bucket:
    """A bucket's shape: how many model calls it holds, and how many it gains back per hour."""

    capacity: float
    per_hour: float

    @property
    def per_second(self) -> float:
        return self.per_hour / 3600.0

    def level(self, tokens: float, updated_at: float, now: float) -> float:
        """What a bucket that held `tokens` at `updated_at` holds at `now` (full when never used)."""
        return min(self.capacity, tokens + max(0.0, now - updated_at) * self.per_second)

    def wait_s(self, level: float, cost: float) -> int:
        """Whole seconds until a bucket at `level` holds `cost` (at least 1; an hour when it never refills)."""
        if self.per_second <= 0 or cost > self.capacity:
            return 3600
        return max(1, math.ceil((cost - level) / self.per_second))


@dataclass(frozen=True)
class Grant:
    """The outcome of one take: whether it was granted, what is left, and when to retry when it was not."""

    granted: bool
    remaining: float
    retry_after_s: int = 0


class Allowances(Protocol):
    def take(self, user_id: str, cost: float, now: float) -> Grant:
        """Take `cost` from `user_id`'s bucket at `now` (epoch seconds), atomically: all of it, or nothing
        and how long until it would be there."""
        ...

    def erase_user(self, user_id: str) -> dict[str, int]:
        """Forget `user_id`'s bucket (forget-me); how many items went, per store."""
        ...
