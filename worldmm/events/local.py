"""The local profile's publisher: wakes the gateway's SSE streams (`GET /events`) of the events' owners.

The streams read the outbox themselves (a stream resumes from `Last-Event-ID` and loses nothing while it
is away); publishing only tells the owner's waiting streams to read now instead of at their next poll.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from worldmm.events.port import Event


class LocalEventHub:
    """Per user, the asyncio events of the streams waiting for that user's events."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    def subscribe(self, user_id: str) -> asyncio.Event:
        """An event set whenever `user_id` has new events (call from the stream's event loop)."""
        woken = asyncio.Event()
        with self._lock:
            self._waiting.setdefault(user_id, set()).add((asyncio.get_running_loop(), woken))
        return woken

    def unsubscribe(self, user_id: str, woken: asyncio.Event) -> None:
        with self._lock:
            waiting = self._waiting.get(user_id, set())
            waiting.difference_update({w for w in waiting if w[1] is woken})
            if not waiting:
                self._waiting.pop(user_id, None)

    def publish(self, events: Sequence[Event]) -> None:
        for user_id in {e.userId for e in events}:
            with self._lock:
                waiting = list(self._waiting.get(user_id, ()))
            for loop, woken in waiting:
                if not loop.is_closed():
                    loop.call_soon_threadsafe(woken.set)
