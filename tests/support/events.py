"""Publishers for tests and the crash harness: events kept in a list, or appended to a file and fsynced."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from worldmm.events.port import Event


class RecordingPublisher:
    """Every publish call's events, in order; `fail` makes the next calls raise (an EventBridge outage)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.fail = False

    def publish(self, events: Sequence[Event]) -> None:
        if self.fail:
            raise RuntimeError("EventBridge unreachable")
        self.events.extend(events)

    def types(self) -> list[str]:
        return [e.type for e in self.events]


class FilePublisher:
    """Appends each event as a JSON line and fsyncs before returning: delivered means on disk (a killed
    process cannot take it back), as EventBridge's accepted PutEvents cannot be."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def publish(self, events: Sequence[Event]) -> None:
        with open(self.path, "a", encoding="utf-8") as out:
            for event in events:
                out.write(event.model_dump_json() + "\n")
            out.flush()
            os.fsync(out.fileno())

    def delivered(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]
