"""How long a model's calls took lately: whether the next one still fits a deadline."""

from __future__ import annotations

import threading
import time
from collections import deque

RECENT_CALLS = 5
"""How many recent calls of a kind say how long the next one takes (the longest of them)."""


class CallTimes:
    """How long a model's calls took lately, by purpose: the longest of the last `RECENT_CALLS` is
    what the next one is expected to take; a kind of call not made yet is expected to take `unseen_s`."""

    def __init__(self, unseen_s: float) -> None:
        self.unseen_s = unseen_s
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def record(self, purpose: str, seconds: float) -> None:
        with self._lock:
            self._seen.setdefault(purpose, deque(maxlen=RECENT_CALLS)).append(seconds)

    def expected(self, purpose: str) -> float:
        with self._lock:
            return max(self._seen.get(purpose, ()), default=self.unseen_s)

    def fits(self, purpose: str, deadline: float | None) -> bool:
        """Whether a call of `purpose` started now is expected to end by `deadline` (`time.perf_counter`)."""
        return deadline is None or time.perf_counter() + self.expected(purpose) <= deadline
