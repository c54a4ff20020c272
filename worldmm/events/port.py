"""Where committed app events go: EventBridge on aws, the local gateway's SSE streams locally."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from worldmm.events.models import SessionProcessed, WindowFailed, WindowProcessed

Event = WindowProcessed | WindowFailed | SessionProcessed


class EventPublisher(Protocol):
    """Delivers committed events, at least once; raises when any of them was not accepted."""

    def publish(self, events: Sequence[Event]) -> None: ...
