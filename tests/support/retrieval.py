"""Memory rows for retrieval tests: segments, canonical entities and triples written through the ORM."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from worldmm.db.models import Entity, MemoryType, ProcessingStatus, Segment, Triple, VisualEmbedding
from worldmm.services import Services

BASE = datetime(2026, 3, 20, 8, 0, tzinfo=UTC)


@dataclass
class MemoryWriter:
    """Writes one user's memory rows; entities are created on first mention (canonical, embedded)."""

    services: Services
    user_id: str
    entities: dict[str, uuid.UUID] = field(default_factory=dict)
    _window: int = 0

    def segment(
        self,
        caption: str,
        *,
        duration: int = 30,
        start: datetime | None = None,
        session_id: str = "session-1",
        frames_key: str | None = None,
        embed: bool = True,
    ) -> uuid.UUID:
        self._window += 1
        start = start or BASE + timedelta(seconds=30 * self._window)
        [embedding] = self.services.embedder.embed([caption]) if embed else [None]
        segment = Segment(
            user_id=self.user_id,
            session_id=session_id,
            window_index=self._window,
            duration_seconds=duration,
            start_time=start,
            end_time=start + timedelta(seconds=duration),
            caption=caption,
            processing_status=ProcessingStatus.COMPLETE,
            caption_embedding=embedding,
            s3_frames_key=frames_key,
        )
        with self.services.db.unit_of_work(self.user_id) as session:
            session.add(segment)
        return segment.id

    def entity(self, name: str) -> uuid.UUID:
        if name not in self.entities:
            [embedding] = self.services.embedder.embed([name])
            entity = Entity(user_id=self.user_id, surface_form=name, canonical_name=name, embedding=embedding)
            with self.services.db.unit_of_work(self.user_id) as session:
                session.add(entity)
            self.entities[name] = entity.id
        return self.entities[name]

    def triple(
        self,
        segment_id: uuid.UUID,
        subject: str,
        predicate: str,
        obj: str | None = None,
        *,
        literal: str | None = None,
        memory_type: MemoryType = MemoryType.EPISODIC,
        invalidated: bool = False,
    ) -> uuid.UUID:
        subject_id = self.entity(subject)
        object_id = self.entity(obj) if obj is not None else None
        [embedding] = self.services.embedder.embed([f"{subject} {predicate} {obj or literal}"])
        triple = Triple(
            segment_id=segment_id,
            user_id=self.user_id,
            memory_type=memory_type,
            subject_entity_id=subject_id,
            predicate=predicate,
            object_entity_id=object_id,
            object_literal=literal,
            embedding=embedding,
            valid_at=BASE,
            invalidated_at=BASE + timedelta(days=1) if invalidated else None,
        )
        with self.services.db.unit_of_work(self.user_id) as session:
            session.add(triple)
        return triple.id

    def visual(self, segment_id: uuid.UUID, embedding: list[float]) -> None:
        with self.services.db.unit_of_work(self.user_id) as session:
            session.add(
                VisualEmbedding(
                    segment_id=segment_id,
                    user_id=self.user_id,
                    embedding=embedding,
                    model="test",
                    timestamp=BASE,
                )
            )
