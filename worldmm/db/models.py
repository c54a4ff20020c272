"""SQLAlchemy 2 typed ORM of the memory tables (spec 001 "Storage Schema" plus our additions, docs/architecture.md)."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Computed,
    DateTime,
    Enum,
    FetchedValue,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from worldmm.db.vector_type import BinaryVector


class Base(DeclarativeBase):
    """Declarative base of every table."""


class ProcessingStatus(StrEnum):
    PENDING = "pending"
    COMPLETE = "complete"
    FAILED = "failed"


class MemoryType(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"


class ConsolidationEvent(StrEnum):
    ADD = "ADD"
    MERGE = "MERGE"
    UPDATE = "UPDATE"
    REMOVE = "REMOVE"
    NONE = "NONE"


def _uuid() -> uuid.UUID:
    return uuid.uuid4()


def _enum(cls: type[StrEnum], name: str) -> Enum:
    return Enum(cls, name=name, values_callable=lambda e: [m.value for m in e])


class Segment(Base):
    """One captioned span of time: a 30 s window or a 3 min / 10 min / 1 h summary."""

    __tablename__ = "worldmm_segments"
    __table_args__ = (
        UniqueConstraint("user_id", "session_id", "window_index", "duration_seconds", name="uq_segment_window"),
        Index("ix_segments_user_time", "user_id", "duration_seconds", "start_time"),
        Index("ix_segments_status", "processing_status", "updated_at"),
        Index("ix_segments_parent", "parent_segment_id"),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=_uuid)
    user_id: Mapped[str] = mapped_column(String(128))
    session_id: Mapped[str] = mapped_column(String(128))
    window_index: Mapped[int] = mapped_column(Integer)
    duration_seconds: Mapped[int] = mapped_column(Integer)
    start_time: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    end_time: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    caption: Mapped[str | None] = mapped_column(Text)
    caption_source: Mapped[str | None] = mapped_column(String(16))  # CaptionMode: seen/tidied/heard (0008)
    transcript: Mapped[str | None] = mapped_column(Text)
    s3_video_key: Mapped[str | None] = mapped_column(String(1024))
    s3_frames_key: Mapped[str | None] = mapped_column(String(1024))
    parent_segment_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_segments.id", ondelete="SET NULL")
    )
    processing_status: Mapped[ProcessingStatus] = mapped_column(
        _enum(ProcessingStatus, "worldmm_processing_status"), default=ProcessingStatus.PENDING
    )
    source_session_id: Mapped[str | None] = mapped_column(String(128))
    frame_count: Mapped[int] = mapped_column(Integer, default=0)
    enriched: Mapped[bool] = mapped_column(Boolean, default=False)
    visual_stored: Mapped[bool] = mapped_column(Boolean, default=False)
    source_fingerprint: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    claim_token: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))  # migration 0002
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    claim_owner: Mapped[str | None] = mapped_column(String(256))  # local profile: the holding process (0010)
    ingest_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # claims so far (0012)
    caption_embedding: Mapped[Any] = mapped_column(BinaryVector(), nullable=True)
    search_tsv: Mapped[Any] = mapped_column(
        TSVECTOR,
        Computed(
            "to_tsvector('english'::regconfig, coalesce(caption, '') || ' ' || coalesce(transcript, ''))",
            persisted=True,
        ),
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now(), onupdate=func.now()
    )


class Entity(Base):
    """A canonical entity (canonical_entity_id NULL) or an alias row pointing at one."""

    __tablename__ = "worldmm_entities"
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=_uuid)
    user_id: Mapped[str] = mapped_column(String(128))
    canonical_entity_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_entities.id", ondelete="CASCADE")
    )
    surface_form: Mapped[str] = mapped_column(String(512))
    canonical_name: Mapped[str | None] = mapped_column(String(512))
    embedding: Mapped[Any] = mapped_column(BinaryVector(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


# A surface form names one entity row per user: concurrent resolution converges on it.
Index("uq_entity_surface", Entity.user_id, func.lower(Entity.surface_form), unique=True)


class Triple(Base):
    """A [subject, predicate, object] fact, episodic (immutable) or semantic (consolidated, bi-temporal)."""

    __tablename__ = "worldmm_triples"
    __table_args__ = (
        CheckConstraint("(object_entity_id IS NULL) <> (object_literal IS NULL)", name="ck_triple_exactly_one_object"),
        Index("ix_triples_user_type", "user_id", "memory_type"),
        Index(
            "ix_triples_valid_semantic",
            "user_id",
            postgresql_where=text("memory_type = 'semantic' AND invalidated_at IS NULL"),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=_uuid)
    segment_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_segments.id", ondelete="CASCADE")
    )
    user_id: Mapped[str] = mapped_column(String(128))
    memory_type: Mapped[MemoryType] = mapped_column(_enum(MemoryType, "worldmm_memory_type"))
    subject_entity_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_entities.id", ondelete="CASCADE")
    )
    predicate: Mapped[str] = mapped_column(String(512))
    object_entity_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_entities.id", ondelete="CASCADE")
    )
    object_literal: Mapped[str | None] = mapped_column(String(1024))
    embedding: Mapped[Any] = mapped_column(BinaryVector(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    valid_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    invalidated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    invalidated_by_segment_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_segments.id", ondelete="SET NULL")
    )


class VisualEmbedding(Base):
    """A VLM2Vec embedding of one window's clip."""

    __tablename__ = "worldmm_visual_embeddings"
    __table_args__ = (UniqueConstraint("segment_id", name="uq_visual_segment"),)

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=_uuid)
    segment_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_segments.id", ondelete="CASCADE")
    )
    user_id: Mapped[str] = mapped_column(String(128))
    embedding: Mapped[Any] = mapped_column(BinaryVector())
    model: Mapped[str | None] = mapped_column(String(256))
    timestamp: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class MemoryHistory(Base):
    """Audit of one consolidation decision, applied or not (shadow mode)."""

    __tablename__ = "worldmm_memory_history"
    __table_args__ = (Index("ix_history_user_time", "user_id", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=_uuid)
    user_id: Mapped[str] = mapped_column(String(128))
    segment_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_segments.id", ondelete="SET NULL")
    )
    triple_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_triples.id", ondelete="SET NULL")
    )
    event: Mapped[ConsolidationEvent] = mapped_column(_enum(ConsolidationEvent, "worldmm_consolidation_event"))
    mode: Mapped[str] = mapped_column(String(16))
    applied: Mapped[bool] = mapped_column(Boolean)
    inputs: Mapped[dict[str, Any]] = mapped_column(JSONB)
    model: Mapped[str | None] = mapped_column(String(256))
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class EntityCorrection(Base):
    """One rename or merge a user made of an entity (append-only; migration 0014)."""

    __tablename__ = "worldmm_entity_corrections"
    __table_args__ = (Index("ix_entity_corrections_user_time", "user_id", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=_uuid)
    user_id: Mapped[str] = mapped_column(String(128))
    entity_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    target_entity_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    action: Mapped[str] = mapped_column(String(16))
    old_name: Mapped[str] = mapped_column(String(512))
    new_name: Mapped[str] = mapped_column(String(512))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class LLMUsage(Base):
    """Tokens spent by one model call, for cost accounting."""

    __tablename__ = "worldmm_llm_usage"
    __table_args__ = (Index("ix_usage_user_time", "user_id", "created_at"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(String(128))
    segment_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("worldmm_segments.id", ondelete="SET NULL")
    )
    purpose: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(256))
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class Chat(Base):
    """A chat thread (local chat store; DynamoDB's Chats table in production)."""

    __tablename__ = "worldmm_chats"
    __table_args__ = (Index("ix_chats_user_activity", "user_id", "last_activity"),)

    chat_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128))
    title: Mapped[str] = mapped_column(String(256), default="")
    last_message: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_activity: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ChatMessage(Base):
    """One message of a chat thread, keyed by a server-generated ULID."""

    __tablename__ = "worldmm_chat_messages"

    chat_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("worldmm_chats.chat_id", ondelete="CASCADE"), primary_key=True
    )
    message_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128))
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ForgottenSpan(Base):
    """A span (or a session) the user erased: its audit record without content, and the tombstone that keeps
    a window landing later from bringing it back (migration 0013)."""

    __tablename__ = "worldmm_forgotten_spans"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(String(128))
    session_id: Mapped[str | None] = mapped_column(String(128))
    span_start: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    span_end: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    requested_by: Mapped[str] = mapped_column(String(128))
    requested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    complete: Mapped[bool] = mapped_column(Boolean, default=False)
    deleted: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)


class VoiceRow(Base):
    """A voice one session named — the wearer's or one the wearer called by name — to be known again in a
    later recording (migration 0015); forgetting the session, or a span of its time, forgets it."""

    __tablename__ = "worldmm_voices"

    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    vector: Mapped[list[float]] = mapped_column(ARRAY(Float))
    seconds: Mapped[float] = mapped_column(Float)
    recorded_from: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    recorded_to: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class AllowanceRow(Base):
    """A user's token bucket of model calls (migration 0016; `worldmm.allowance.postgres`)."""

    __tablename__ = "worldmm_allowances"

    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class EventOutboxRow(Base):
    """An app event (issue 65, migration 0019): written with the write it reports, published after it commits
    (`worldmm.events`); ids and counts only, never memory content."""

    __tablename__ = "worldmm_event_outbox"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, server_default=FetchedValue())  # bigserial
    user_id: Mapped[str] = mapped_column(String(128))
    session_id: Mapped[str] = mapped_column(String(128))
    subject: Mapped[str] = mapped_column(String(256))
    detail_type: Mapped[str] = mapped_column(String(64))
    detail: Mapped[dict[str, Any]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    published_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


MEMORY_TABLES: tuple[str, ...] = (
    "worldmm_segments",
    "worldmm_entities",
    "worldmm_triples",
    "worldmm_visual_embeddings",
    "worldmm_memory_history",
    "worldmm_llm_usage",
    "worldmm_chats",
    "worldmm_chat_messages",
    "worldmm_graph_generations",
    "worldmm_segment_generations",
    "worldmm_forgotten_spans",
    "worldmm_entity_corrections",
    "worldmm_voices",
    "worldmm_allowances",
    "worldmm_event_outbox",
)
