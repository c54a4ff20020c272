"""Events and results of the ingest functions, named exactly as spec 000's Types, validated at the edge.

An event is untrusted input: ids are restricted to the characters real ids use (no path separators, no
control characters, no NUL), indices and counts are bounded, and a retrigger names a bounded number of
windows. Whether the session exists and belongs to the event's user is checked by the pipeline
(`worldmm.ingest.catalog.port.owned_session`) before anything is read or written.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from worldmm.errors import BadRequest

SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
"""A capture session id (a ULID) or an offline recording's id; never `..`, `/` or a control character."""

USER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@:+=|~-]{0,127}$"
"""An identity provider's subject (a Cognito UUID, `auth0|…`, an e-mail): printable, no separators."""

MAX_WINDOW_INDEX = 1_000_000
"""The highest window index an event may name: about a year of 30-second windows."""

MAX_FRAME_COUNT = 100_000
"""The most frames an event may announce for one window (capture sends 16)."""

MAX_RETRIGGER_WINDOWS = 1_000
"""The most windows one retrigger invokes (an explicit list longer than this is rejected; a resolved
list is cut here and the rest reported as skipped — run it again)."""

SessionId = Annotated[str, Field(pattern=SESSION_ID_PATTERN)]
UserId = Annotated[str, Field(pattern=USER_ID_PATTERN)]
WindowIndex = Annotated[int, Field(ge=0, le=MAX_WINDOW_INDEX)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class IngestWindowEvent(_Model):
    """One 30-second window to ingest (`frameCount` 0: audio-only or unknown, the prefix is listed)."""

    sessionId: SessionId
    userId: UserId
    windowIndex: WindowIndex
    frameCount: Annotated[int, Field(ge=0, le=MAX_FRAME_COUNT)]


class IngestWindowEnriched(_Model):
    status: Literal["ok"] = "ok"
    segmentId: str
    enriched: Literal[True] = True
    entityCount: int
    tripleCount: int
    visualStored: bool


class IngestWindowAudioOnly(_Model):
    status: Literal["ok"] = "ok"
    segmentId: str
    enriched: Literal[False] = False


class IngestWindowAlreadyProcessed(_Model):
    status: Literal["already_processed"] = "already_processed"
    segment_id: str


class IngestWindowSkipped(_Model):
    status: Literal["skipped"] = "skipped"
    reason: str


IngestWindowSuccess = (
    IngestWindowEnriched | IngestWindowAudioOnly | IngestWindowAlreadyProcessed | IngestWindowSkipped
)


class RetriggerEvent(_Model):
    """Re-run a session's windows: the pending ones, all of them (`force`), or the ones named."""

    sessionId: SessionId
    userId: UserId
    windowIndices: Annotated[list[WindowIndex], Field(max_length=MAX_RETRIGGER_WINDOWS)] | None = None
    force: bool = False


class RetriggerResponse(_Model):
    triggered: list[int]
    skipped: list[int]


class EventRejected(BadRequest):
    """An event that can never succeed (unknown session, someone else's session): logged, never retried.

    `reason` is a short key (`unknown_session`, `session_not_owned`); the message never says which of
    the two it was to the caller of an API, only to the log.
    """

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or reason)
        self.reason = reason
