"""A Server-Sent Events reader for tests and benchmarks: `GET /events` in a thread, messages as they arrive."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class SseMessage:
    id: str
    event: str
    data: dict[str, Any]
    received: float  # time.time() when its blank line arrived


@dataclass
class SseListener:
    """Reads `url` with `token` (reconnecting with Last-Event-ID when a stream closes) until `stop()`."""

    url: str
    token: str
    messages: list[SseMessage] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    last_id: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    connected: threading.Event = field(default_factory=threading.Event)

    def start(self) -> SseListener:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self.connected.wait(10), "the stream did not open"
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)

    def wait_for(self, count: int, timeout: float) -> list[SseMessage]:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(self.messages)

    def _run(self) -> None:
        with httpx.Client(timeout=httpx.Timeout(30, connect=5)) as client:
            while not self._stop.is_set():
                headers = {"Authorization": f"Bearer {self.token}"}
                if self.last_id is not None:
                    headers["Last-Event-ID"] = self.last_id
                with client.stream("GET", self.url, headers=headers) as response:
                    self.statuses.append(response.status_code)
                    if response.status_code != 200:
                        self.connected.set()
                        return
                    self._read(response)

    def _read(self, response: httpx.Response) -> None:
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if line.startswith("retry:"):
                self.connected.set()
            if self._stop.is_set():
                return
            if line == "":
                if "data" in fields:
                    self.last_id = fields.get("id", self.last_id)
                    data = json.loads(fields["data"])
                    self.messages.append(SseMessage(fields.get("id", ""), fields.get("event", ""), data, time.time()))
                fields = {}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
