"""`GET /events` of the local gateway: the caller's app events as Server-Sent Events (issue 65).

The aws profile puts the same events on EventBridge (`worldmm.events.eventbridge`); locally the phone (or
the page) reads them here. A stream is the caller's outbox read in order (`id:` is the event's `seq`): it
starts after `Last-Event-ID` (or `?after=`), else at the newest event, reads again when the ingest publishes
the caller's events (`worldmm.events.local.LocalEventHub`) or after a second at most, and closes after `wait`
seconds; `EventSource` reconnects by itself, sending the last id, so nothing is lost between two streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from worldmm.errors import Unauthenticated
from worldmm.events.local import LocalEventHub
from worldmm.events.outbox import events_after, last_seq
from worldmm.gateway.auth import verify_token
from worldmm.gateway.settings import GatewaySettings

if TYPE_CHECKING:
    from worldmm.db.engine import Database

EVENTS_PATH = "/events"
MAX_WAIT_S = 5
"""The longest a stream stays open (also the default): the client reconnects with its Last-Event-ID."""
POLL_S = 1.0
"""A stream reads the outbox at least this often (events recorded but not yet published reach it too)."""
RETRY_MS = 250
_POSITION = re.compile(r"^[0-9]{1,18}$")


class _BadRequest(ValueError):
    pass


def _position(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    if not _POSITION.match(value.strip()):
        raise _BadRequest(f"{name} must be an event id (a non-negative integer)")
    return int(value.strip())


def _wait(value: str | None) -> float:
    if value is None:
        return float(MAX_WAIT_S)
    if not re.match(r"^[0-9]{1,3}$", value) or int(value) > MAX_WAIT_S:
        raise _BadRequest(f"wait must be an integer from 0 to {MAX_WAIT_S}")
    return float(value)


def _error(status: int, message: str) -> Response:
    return JSONResponse({"message": message}, status_code=status)


class EventStreams:
    """The `/events` endpoint over the memory database and the local hub that wakes its streams."""

    def __init__(self, settings: GatewaySettings, db: Database, hub: LocalEventHub | None) -> None:
        self.settings = settings
        self.db = db
        self.hub = hub

    async def endpoint(self, request: Request) -> Response:
        """One `GET /events`: 401 without a valid token, 400 for a bad position or wait, else the stream."""
        try:
            user_id = str(verify_token(request.headers.get("authorization"), self.settings)["sub"])
        except Unauthenticated:
            return _error(401, "Unauthorized")
        try:
            after = _position(request.headers.get("last-event-id"), "Last-Event-ID")
            if after is None:
                after = _position(request.query_params.get("after"), "after")
            wait_s = _wait(request.query_params.get("wait"))
        except _BadRequest as bad:
            return _error(400, str(bad))
        if after is None:
            after = await run_in_threadpool(last_seq, self.db, user_id)
        return StreamingResponse(
            self._stream(request, user_id, after, wait_s),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def _stream(self, request: Request, user_id: str, after: int, wait_s: float) -> AsyncIterator[bytes]:
        woken = self.hub.subscribe(user_id) if self.hub is not None else asyncio.Event()
        deadline = time.monotonic() + wait_s
        try:
            yield f"retry: {RETRY_MS}\n\n".encode()
            while True:
                woken.clear()
                for event in await run_in_threadpool(events_after, self.db, user_id, after):
                    yield f"id: {event.seq}\nevent: {event.type}\ndata: {event.model_dump_json()}\n\n".encode()
                    after = event.seq
                left = deadline - time.monotonic()
                if left <= 0 or await request.is_disconnected():
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), timeout=min(POLL_S, left))
        finally:
            if self.hub is not None:
                self.hub.unsubscribe(user_id, woken)
