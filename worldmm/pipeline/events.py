"""Events and results of the ingest functions, named exactly as spec 000's Types."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class IngestWindowEvent(_Model):
    """One 30-second window to ingest (`frameCount` 0: audio-only or unknown, the prefix is listed)."""

    sessionId: Annotated[str, Field(min_length=1, max_length=128)]
    userId: Annotated[str, Field(min_length=1, max_length=128)]
    windowIndex: Annotated[int, Field(ge=0)]
    frameCount: Annotated[int, Field(ge=0)]


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

    sessionId: Annotated[str, Field(min_length=1, max_length=128)]
    userId: Annotated[str, Field(min_length=1, max_length=128)]
    windowIndices: list[Annotated[int, Field(ge=0)]] | None = None
    force: bool = False


class RetriggerResponse(_Model):
    triggered: list[int]
    skipped: list[int]
