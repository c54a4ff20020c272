"""How long a model's calls took lately: whether the next one still fits a deadline."""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections import Counter, deque
from collections.abc import Callable

RECENT_CALLS = 5
"""How many recent calls of a kind say how long the next one takes (`CallTimes.expected`)."""
REMEMBER_S = 600.0
"""A call older than this says nothing of the next one: after a slow spell (a busy host, a cold cache) that
made later calls be skipped, the kind is tried again rather than skipped for the life of the process."""
KEPT_OUT_TO_FORGET = RECENT_CALLS
"""A kind's slowest recent call, an outlier, that kept this many calls in a row from being made where its
typical call would have fitted, is forgotten (`CallTimes.fits`): one slow call is not the longest of the
recent ones for `REMEMBER_S` only because no call of its kind was made since to say otherwise."""
OUTLIER = 2.0
"""A call that took this many times the median of its kind's recent calls or more is an outlier (a hiccup of
the host); a kind's usual spread (a reading's length varies) is not, and is not forgotten: forgetting it made
more answers overrun the deadline (5 of 260 over 5 s on held out 9–15, against 1–3)."""

_Call = tuple[float, float, float]  # when, seconds, size


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
        self._seen: dict[str, deque[_Call]] = {}
        self._kept_out: Counter[str] = Counter()
        self._lock = threading.Lock()

    def record(self, purpose: str, seconds: float, size: int = 1) -> None:
        with self._lock:
            self._seen.setdefault(purpose, deque(maxlen=RECENT_CALLS)).append((self._clock(), seconds, max(size, 1)))
            self._kept_out[purpose] = 0

    def expected(self, purpose: str, size: int = 1) -> float:
        with self._lock:
            recent = self._recent(purpose)
        return max((_expected(call, size) for call in recent), default=self.unseen_s)

    def fits(self, purpose: str, deadline: float | None, size: int = 1) -> bool:
        """Whether a call of `purpose` and `size` started now is expected to end by `deadline`
        (`time.perf_counter`). A call kept out only by its kind's slowest recent one, an outlier (`OUTLIER`; the
        median of them would have fitted), counts against it: `KEPT_OUT_TO_FORGET` in a row forget it."""
        if deadline is None:
            return True
        left = deadline - time.perf_counter()
        with self._lock:
            recent = self._recent(purpose)
            expectations = [_expected(call, size) for call in recent]
            if max(expectations, default=self.unseen_s) <= left:
                return True
            typical = statistics.median(expectations) if len(recent) > 1 else math.inf
            if typical <= left and max(expectations) >= OUTLIER * typical:
                self._kept_out[purpose] += 1
                if self._kept_out[purpose] >= KEPT_OUT_TO_FORGET:
                    slowest = max(range(len(recent)), key=lambda i: expectations[i])
                    self._seen[purpose].remove(recent[slowest])
                    self._kept_out[purpose] = 0
            return False

    def _recent(self, purpose: str) -> list[_Call]:
        since = self._clock() - self.remember_s
        return [call for call in self._seen.get(purpose, ()) if call[0] >= since]


def _expected(call: _Call, size: int) -> float:
    """How long a call of `size` takes by this one: as long, or longer in proportion to its size."""
    _, seconds, of = call
    return max(seconds, seconds / of * max(size, 1))
