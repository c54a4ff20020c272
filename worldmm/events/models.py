"""The app events as their consumers read them: EventBridge `detail`, the SSE `data` of `GET /events`.

Ids, indices and counts only: an event never carries a caption, a transcript, a name or an answer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

EVENT_SOURCE = "worldmm"
"""EventBridge `source` of every app event."""
DETAIL_TYPES = ("WindowProcessed", "WindowFailed", "SessionProcessed")


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    eventId: str = Field(description="Stable id: a re-delivered event has the same id (drop duplicates by it)")
    userId: str = Field(description="The wearer (the token's `sub`)")
    sessionId: str = Field(description="The capture session")
    occurredAt: datetime = Field(description="When the outcome was committed (UTC)")
    seq: int = Field(description="Position in the owner's stream (the SSE `id`; send it back as Last-Event-ID)")


class WindowProcessed(_Event):
    """A 30 s window is a memory: captioned (or transcript-only), searchable."""

    type: Literal["WindowProcessed"] = "WindowProcessed"
    windowIndex: int
    segmentId: str
    attempt: int = Field(description="Which processing attempt succeeded (1 the first time)")
    frameCount: int
    enriched: bool = Field(description="False when the window was kept with its transcript alone")
    visualStored: bool


class WindowFailed(_Event):
    """A processing attempt of a 30 s window failed; it is retried until the attempts run out."""

    type: Literal["WindowFailed"] = "WindowFailed"
    windowIndex: int
    segmentId: str
    attempt: int
    frameCount: int
    errorType: str = Field(description="The failing step's error class (no message: it may quote content)")


class SessionProcessed(_Event):
    """The session ended and every one of its windows is done: complete, or failed for good."""

    type: Literal["SessionProcessed"] = "SessionProcessed"
    windows: int
    complete: int
    failed: int


AppEvent = Annotated[WindowProcessed | WindowFailed | SessionProcessed, Field(discriminator="type")]
APP_EVENT: TypeAdapter[WindowProcessed | WindowFailed | SessionProcessed] = TypeAdapter(AppEvent)


def app_event(
    event_id: Any, seq: int, user_id: str, session_id: str, detail_type: str, detail: dict[str, Any], at: datetime
) -> WindowProcessed | WindowFailed | SessionProcessed:
    """One outbox row as its consumers see it."""
    payload = {
        **detail,
        "type": detail_type,
        "eventId": str(event_id),
        "userId": user_id,
        "sessionId": session_id,
        "occurredAt": at,
        "seq": seq,
    }
    return APP_EVENT.validate_python(payload)


def event_schema() -> dict[str, Any]:
    """The JSON Schema of the events (docs/app-developers.md, the OpenAPI document's `/events`)."""
    return APP_EVENT.json_schema(ref_template="#/components/schemas/{model}")
