"""How long a model's calls took lately: whether the next one still fits a deadline."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

RECENT_CALLS = 5
"""How many recent calls of a kind say how long the next one takes (`CallTimes.expected`)."""
REMEMBER_S = 600.0
"""A call older than this says nothing of the next one: after a slow spell (a busy host, a cold cache) that
made later calls be skipped, the kind is tried again rather than skipped for the life of the process."""


class CallTimes:
    """How long a model's calls took lately, by purpose and size (e.g. the prompt's characters: a local model's
    call takes longer the longer the prompt it reads). Of the last `RECENT_CALLS` of its kind made in the last
    `remember_s`, a call is expected to take the longest of them, or its size times their slowest seconds per
    unit of size when that is longer (a cached prompt's start makes a smaller call no faster in proportion); a
    kind of call not made in that time is expected to take `unseen_s`."""

    def __init__(
        self, unseen_s: float, remember_s: float = REMEMBER_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.unseen_s = unseen_s
        self.remember_s = remember_s
        self._clock = clock
        self._seen: dict[str, deque[tuple[float, float, float]]] = {}  # purpose: (when, seconds, size)
        self._lock = threading.Lock()

    def record(self, purpose: str, seconds: float, size: int = 1) -> None:
        with self._lock:
            self._seen.setdefault(purpose, deque(maxlen=RECENT_CALLS)).append((self._clock(), seconds, max(size, 1)))

    def expected(self, purpose: str, size: int = 1) -> float:
        since = self._clock() - self.remember_s
        with self._lock:
            recent = [(seconds, of) for at, seconds, of in self._seen.get(purpose, ()) if at >= since]
        if not recent:
            return self.unseen_s
        return max(max(seconds for seconds, _ in recent), max(seconds / of for seconds, of in recent) * max(size, 1))

    def fits(self, purpose: str, deadline: float | None, size: int = 1) -> bool:
        """Whether a call of `purpose` and `size` started now is expected to end by `deadline`
        (`time.perf_counter`)."""
        return deadline is None or time.perf_counter() + self.expected(purpose, size) <= deadline
