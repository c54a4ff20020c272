"""The aws profile's publisher: app events on the deployment's EventBridge bus (`EVENTS_BUS_NAME`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from worldmm.events.models import EVENT_SOURCE
from worldmm.events.port import Event

MAX_ENTRIES = 10  # PutEvents takes at most 10 entries a call


class EventPublishError(RuntimeError):
    """EventBridge did not accept every entry (they stay unpublished in the outbox)."""


class EventBridgePublisher:
    """`PutEvents` of each event: source `worldmm`, detail-type its type, detail its JSON."""

    def __init__(self, bus_name: str, client: Any | None = None) -> None:
        self.bus_name = bus_name
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            from worldmm.aws import aws_client

            self._client = aws_client("events", connect_timeout=2, read_timeout=5, max_attempts=3)
        return self._client

    def publish(self, events: Sequence[Event]) -> None:
        for start in range(0, len(events), MAX_ENTRIES):
            batch = events[start : start + MAX_ENTRIES]
            answer = self.client.put_events(
                Entries=[
                    {
                        "Source": EVENT_SOURCE,
                        "DetailType": e.type,
                        "Detail": e.model_dump_json(),
                        "EventBusName": self.bus_name,
                        "Time": e.occurredAt,
                    }
                    for e in batch
                ]
            )
            failed = int(answer.get("FailedEntryCount", 0))
            if failed:
                codes = sorted({str(x.get("ErrorCode")) for x in answer.get("Entries", []) if x.get("ErrorCode")})
                raise EventPublishError(f"EventBridge refused {failed} of {len(batch)} events: {', '.join(codes)}")
