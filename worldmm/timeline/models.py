"""The memories API's values: the timeline, one memory with its facts and media, a session's ingest status."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from worldmm.chat.models import CURSOR_PATTERN
from worldmm.ingest.events import SESSION_ID_PATTERN
from worldmm.scale import Scale
from worldmm.wire import MAX_JSON_INT

MEMORY_ID_PATTERN = r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
"""Memory ids are UUIDs (the segment's id); anything else names no memory."""

MemoryStatus = Literal["pending", "complete", "failed"]
WindowStatus = Literal["pending", "complete", "failed", "waiting_for_gpu"]
CaptionSource = Literal["seen", "tidied", "heard", "written", "extractive"]

_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")

_ANSWER = ConfigDict(json_schema_serialization_defaults_required=True)


def _rfc3339_text(value: object) -> object:
    """Only an RFC 3339 date-time with its offset: never epoch numbers or a time without a zone."""
    if isinstance(value, str) and not _DATE_TIME.fullmatch(value):
        raise ValueError("a time is an RFC 3339 date-time with an offset, e.g. 2026-11-24T09:00:00Z")
    return value


def _in_utc_time(value: datetime | None) -> datetime | None:
    """In UTC; an instant UTC cannot hold is invalid."""
    if value is None:
        return None
    try:
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("the time is out of range") from exc


class MemoriesQuery(BaseModel):
    """Query string of GET /memories: a time span (`from` inclusive, `to` exclusive; RFC 3339 date-times with
    their offset), one scale or every scale, and a page. Memories overlapping the span are listed. A cursor
    carries its listing's span and scale: the next page needs only `cursor` (and `limit`)."""

    model_config = ConfigDict(extra="ignore")

    start: datetime | None = Field(default=None, alias="from", examples=["2026-11-24T09:00:00Z"])
    end: datetime | None = Field(default=None, alias="to", examples=["2026-11-24T10:00:00Z"])
    scale: Scale | None = Field(default=None, description="Segment length in seconds; absent: every scale")
    cursor: str | None = Field(default=None, max_length=4096, pattern=CURSOR_PATTERN)
    limit: int | None = Field(default=None, ge=1, le=MAX_JSON_INT)

    _rfc3339 = field_validator("start", "end", mode="before")(_rfc3339_text)
    _in_utc = field_validator("start", "end")(_in_utc_time)

    @field_validator("scale", mode="before")
    @classmethod
    def _scale_from_text(cls, value: object) -> object:
        # Query values arrive as text; a Literal of ints takes only ints.
        if isinstance(value, str) and value.isdigit():
            return int(value)
        return value

    @field_validator("cursor")
    @classmethod
    def _empty_cursor_is_none(cls, value: str | None) -> str | None:
        return value or None


class Memory(BaseModel):
    """One remembered span: a 30 s window (`duration_seconds` 30) or a summary of 180, 600 or 3600 s."""

    model_config = _ANSWER

    id: str
    start_time: str
    end_time: str
    duration_seconds: int
    caption: str | None
    caption_source: CaptionSource | None = Field(
        description="a window's: heard (from the transcript alone), tidied (the transcript tidied by a model) or seen "
        "(from frames); a summary's: written (a model wrote it, every detail checked against the span) or "
        "extractive (its windows' own lines)"
    )
    session_id: str
    window_index: int
    status: MemoryStatus


class MemoriesPage(BaseModel):
    """A page of the caller's memories, oldest first; `next_cursor` is opaque, None on the last page."""

    model_config = _ANSWER

    memories: list[Memory]
    next_cursor: str | None = Field(default=None, pattern=CURSOR_PATTERN)


class MemoryEntity(BaseModel):
    """An entity a memory's facts name: its canonical name, or its surface form when it has none."""

    id: str
    name: str


class MemoryTriple(BaseModel):
    """A fact recorded from a memory; `object` is an entity's name or a literal."""

    id: str
    subject: str
    predicate: str
    object: str
    memory_type: Literal["episodic", "semantic"]
    valid: bool = Field(description="False once a later memory invalidated it (semantic facts)")


class MediaLink(BaseModel):
    """A short-lived GET URL of one of a window's frames or its audio."""

    name: str
    url: str
    expires_in_s: int


class MemoryDetail(Memory):
    """One memory with its transcript, the entities and facts recorded from it, and (a window whose objects
    the store can presign) URLs of its frames and audio."""

    model_config = _ANSWER

    transcript: str | None
    entities: list[MemoryEntity]
    triples: list[MemoryTriple]
    media: list[MediaLink]


class SessionWindow(BaseModel):
    """One 30 s window of a session and where its ingest stands."""

    window_index: int
    status: WindowStatus
    start_time: str | None
    end_time: str | None
    memory_id: str | None = Field(description="The window's memory, once ingest has started on it")


class SessionCounts(BaseModel):
    pending: int
    complete: int
    failed: int
    waiting_for_gpu: int


class SessionStatus(BaseModel):
    """A capture session's ingest status: every window it has (or its catalog announced), and the counts."""

    model_config = _ANSWER

    session_id: str = Field(pattern=SESSION_ID_PATTERN)
    ended: bool
    counts: SessionCounts
    windows: list[SessionWindow]


class ForgetSpanQuery(BaseModel):
    """Query string of DELETE /memories: the span [from, to) to erase (RFC 3339 date-times with their offset,
    `from` before `to`)."""

    model_config = ConfigDict(extra="ignore")

    start: datetime = Field(alias="from", examples=["2026-11-24T09:00:00Z"])
    end: datetime = Field(alias="to", examples=["2026-11-24T10:00:00Z"])

    _rfc3339 = field_validator("start", "end", mode="before")(_rfc3339_text)
    _in_utc = field_validator("start", "end")(_in_utc_time)

    @model_validator(mode="after")
    def _ordered(self) -> ForgetSpanQuery:
        if not self.start < self.end:
            raise ValueError("from must be before to")
        return self


class ForgetSpanResult(BaseModel):
    """What a span (or session) erase deleted: items per store, no content. Another call finds nothing more."""

    model_config = _ANSWER

    start: str | None = Field(default=None, description="The span's `from` (absent for a session)")
    end: str | None = Field(default=None, description="The span's `to` (absent for a session)")
    session_id: str | None = None
    deleted: dict[str, int] = Field(
        description="Items erased per store: objects, postgres.windows, postgres.summaries, "
        "postgres.summaries_invalidated, postgres.triples, postgres.entities, postgres.visual_embeddings, "
        "postgres.memory_history, postgres.semantic_restored, postgres.voices, redis.keys, dynamodb.capture_windows"
    )


ENTITY_NAME_PATTERN = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"
"""An entity's name holds something besides whitespace and no control characters."""


class EntityCorrectionRequest(BaseModel):
    """Body of PATCH /entities/{id}: what the entity is really called. A name another of the caller's entities
    already has merges the two; any other name renames it."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=200, pattern=ENTITY_NAME_PATTERN, examples=["Marco"])


class EntityCorrected(BaseModel):
    """The entity after a correction: the canonical entity it now is, its name, and every form that names it."""

    model_config = _ANSWER

    entity_id: str = Field(description="The entity the request named (an alias row or a canonical entity)")
    canonical_id: str = Field(description="The canonical entity it is now: itself, or the one it was merged into")
    name: str
    action: Literal["rename", "merge"]
    aliases: list[str] = Field(description="Every surface form that names the canonical entity, oldest first")
