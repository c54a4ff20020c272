"""Typed values of the capture side: API requests and responses, a window's buffer state, close outcomes."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from worldmm.wire import JsonInt

FRAME_CONTENT_TYPES = ("image/jpeg",)
AUDIO_CONTENT_TYPES = ("audio/wav", "audio/x-wav", "audio/wave")


class CloseReason(StrEnum):
    """Why a window stopped buffering."""

    COMPLETE = "complete"  # expected frames and the audio chunk are in
    TIMEOUT = "timeout"  # the wall-time limit passed since its first upload
    SESSION_END = "session_end"  # the wearer ended the session


class UploadKind(StrEnum):
    FRAME = "frame"
    AUDIO = "audio"


class CaptureSession(BaseModel):
    """A row of the sessions table (`createdAt` anchors every window's timestamps in ingest)."""

    model_config = ConfigDict(frozen=True)

    session_id: str
    user_id: str
    created_at: str
    ended_at: str | None = None


class StartSessionResult(BaseModel):
    sessionId: str
    createdAt: str
    windowSeconds: int
    expectedFrames: int


SESSION_ID_PATTERN = r"^[0-9A-HJKMNP-TV-Z]{26}$"
"""Session ids are server-made ULIDs; any other id names no session (403, as another user's would)."""


class PresignFramesRequest(BaseModel):
    """Ask for PUT URLs for frames `start .. start+count-1` of one window (the service checks the window's
    bounds, which come from settings; the OpenAPI document states them)."""

    model_config = ConfigDict(extra="forbid")

    windowIndex: JsonInt = Field(ge=0, examples=[0])
    count: JsonInt = Field(ge=1, examples=[1])
    start: JsonInt = Field(default=0, ge=0)
    contentType: str = Field(default="image/jpeg", json_schema_extra={"enum": list(FRAME_CONTENT_TYPES)})


class PresignAudioRequest(BaseModel):
    """Ask for the PUT URL of one window's audio chunk."""

    model_config = ConfigDict(extra="forbid")

    windowIndex: JsonInt = Field(ge=0, examples=[0])
    contentType: str = Field(default="audio/wav", json_schema_extra={"enum": list(AUDIO_CONTENT_TYPES)})


class PresignedUpload(BaseModel):
    """One upload, as a browser-style S3 POST: a multipart/form-data POST to `url` with every entry of `fields`
    as a form field, then the object as the last part, named `file`. The bucket (or the local gateway) refuses
    a body longer than `maxBytes` or of another content type. `headers` stays for older clients and is empty
    (the form carries the content type)."""

    model_config = ConfigDict(json_schema_serialization_defaults_required=True)  # always written

    kind: UploadKind
    index: int | None = None
    key: str
    url: str
    method: str = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    fields: dict[str, str] = Field(default_factory=dict, description="Form fields to send, in order, before `file`")
    maxBytes: int = Field(description="The largest object this upload takes (bytes)")


class PresignResult(BaseModel):
    sessionId: str
    windowIndex: int
    expiresIn: int
    uploads: list[PresignedUpload]


class WindowState(BaseModel):
    """A window's buffer row: which frames and whether audio landed; closed once."""

    session_id: str
    window_index: int
    user_id: str
    frames: frozenset[int] = frozenset()
    has_audio: bool = False
    opened_at: float | None = None
    closed_at: float | None = None
    close_reason: str | None = None

    @property
    def frame_count(self) -> int:
        return len(self.frames)


class UploadedObject(BaseModel):
    """One object that landed in the bucket under a window prefix."""

    session_id: str
    window_index: int
    kind: UploadKind
    frame_index: int | None = None


class UploadOutcome(BaseModel):
    """What recording an upload did."""

    status: str  # "buffered" | "closed" | "retriggered" | "kept" (no more re-runs) | "duplicate" | "ignored"
    sessionId: str | None = None
    windowIndex: int | None = None
    frameCount: int | None = None


class ClosedWindow(BaseModel):
    """A window this call closed and handed to ingest (exactly once)."""

    windowIndex: int
    frameCount: int
    reason: CloseReason


class EndSessionResult(BaseModel):
    sessionId: str
    endedAt: str
    closedWindows: list[int]


class SweepResult(BaseModel):
    closedWindows: list[ClosedWindow]
