"""The caller's memories as they can see them: the timeline, one memory, a session's ingest status.

Every query runs in the caller's unit of work (row-level security) and filters on `user_id` as well, so a
memory or session of another user reads exactly as a missing one: `Forbidden`.
"""

from __future__ import annotations

import heapq
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Protocol, get_args, runtime_checkable

from sqlalchemy import Select, select, tuple_
from sqlalchemy.orm import aliased

from worldmm.chat.cursor import decode_cursor, encode_cursor
from worldmm.chat.models import iso_timestamp
from worldmm.db.models import Entity, ProcessingStatus, Segment, Triple
from worldmm.errors import BadRequest, Forbidden
from worldmm.ingest.catalog.port import SessionInfo, window_span
from worldmm.ingest.events import SESSION_ID_PATTERN
from worldmm.scale import SCALES
from worldmm.timeline.models import (
    CaptionSource,
    MediaLink,
    MemoriesPage,
    MemoriesQuery,
    Memory,
    MemoryDetail,
    MemoryEntity,
    MemoryTriple,
    SessionCounts,
    SessionStatus,
    SessionWindow,
)

if TYPE_CHECKING:
    from worldmm.db.engine import Database
    from worldmm.ingest.catalog.port import SessionCatalog
    from worldmm.media.objects import ObjectStore
    from worldmm.timeline.settings import TimelineSettings

NOT_YOURS = "memory not found or not yours"
SESSION_NOT_YOURS = "session not found or not yours"


@runtime_checkable
class PresignsDownloads(Protocol):
    """An object store that can hand out short-lived GET URLs (S3); the local directory store cannot."""

    def presign_get(self, key: str, expires_s: int) -> str: ...


def _memory_fields(row: Segment) -> dict[str, object]:
    return {
        "id": str(row.id),
        "start_time": iso_timestamp(row.start_time),
        "end_time": iso_timestamp(row.end_time),
        "duration_seconds": row.duration_seconds,
        "caption": row.caption,
        "caption_source": row.caption_source if row.caption_source in get_args(CaptionSource) else None,
        "session_id": row.session_id,
        "window_index": row.window_index,
        "status": ProcessingStatus(row.processing_status).value,
    }


class MemoryService:
    """Reads of one user's memories; `gpu_waiting` says whether a pending window with frames waits for the GPU."""

    def __init__(
        self,
        settings: TimelineSettings,
        db: Database,
        store: ObjectStore,
        sessions: SessionCatalog,
        gpu_waiting: Callable[[], bool],
    ) -> None:
        self.settings = settings
        self.db = db
        self.store = store
        self.sessions = sessions
        self.gpu_waiting = gpu_waiting
        self._cursor_key: str | None = None  # fetched when a cursor is first signed or checked, never before

    # --- the timeline ---------------------------------------------------------------------------------------

    def _cursor_secret(self) -> str:
        if self._cursor_key is None:
            self._cursor_key = self.settings.cursor_signing_secret()
        return self._cursor_key

    def _page_size(self, limit: int | None) -> int:
        if limit is None:
            return self.settings.memory_page_default
        return min(limit, self.settings.memory_page_max)

    @staticmethod
    def _filters(query: MemoriesQuery) -> dict[str, str]:
        return {
            "f": query.start.isoformat() if query.start else "",
            "u": query.end.isoformat() if query.end else "",
            "s": str(query.scale or ""),
        }

    def _resume(
        self, user_id: str, query: MemoriesQuery
    ) -> tuple[MemoriesQuery, tuple[datetime, int, uuid.UUID] | None]:
        """The listing to read and where to start it: a cursor carries its listing's filters, so a next page
        needs only the cursor; a filter given beside it must be the same (else 400 "invalid cursor")."""
        if query.cursor is None:
            return query, None
        position = decode_cursor(self._cursor_secret(), ["memories", user_id], query.cursor)
        given = self._filters(query)
        if any(value and value != position.get(name) for name, value in given.items()):
            raise BadRequest("invalid cursor")
        try:
            listing = MemoriesQuery.model_validate(
                {
                    "from": position["f"] or None,
                    "to": position["u"] or None,
                    "scale": position["s"] or None,
                    "limit": query.limit,
                }
            )
            moment = datetime.strptime(position["t"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
            return listing, (moment, int(position["d"]), uuid.UUID(position["i"]))
        except (KeyError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise BadRequest("invalid cursor") from exc

    @staticmethod
    def _scale_page(
        user_id: str, scale: int, query: MemoriesQuery, after: tuple[datetime, int, uuid.UUID] | None, limit: int
    ) -> Select[Segment]:
        """One scale's memories overlapping the span after the cursor, in page order.

        A memory lasts its `duration_seconds`, so one ending after `from` starts after `from - scale`: that
        bound (and the cursor's start) lets the (user_id, duration_seconds, start_time) index range the scan.
        """
        stmt = select(Segment).where(Segment.user_id == user_id, Segment.duration_seconds == scale)
        if query.start is not None:
            stmt = stmt.where(Segment.end_time > query.start)
            if query.start > datetime.min.replace(tzinfo=UTC) + timedelta(seconds=scale):
                stmt = stmt.where(Segment.start_time > query.start - timedelta(seconds=scale))
        if query.end is not None:
            stmt = stmt.where(Segment.start_time < query.end)
        if after is not None:
            order = (Segment.start_time, Segment.duration_seconds, Segment.id)
            stmt = stmt.where(Segment.start_time >= after[0], tuple_(*order) > tuple_(*after))
        return stmt.order_by(Segment.start_time, Segment.id).limit(limit)

    def list_memories(self, user_id: str, query: MemoriesQuery) -> MemoriesPage:
        """The memories overlapping [from, to), oldest first (then shortest), one page of them."""
        query, after = self._resume(user_id, query)
        size = self._page_size(query.limit)
        scales = [query.scale] if query.scale else list(SCALES)
        with self.db.unit_of_work(user_id) as session:
            # One index range scan per scale (ix_segments_user_time), merged: a page is the first `size + 1`.
            per_scale = [session.scalars(self._scale_page(user_id, scale, query, after, size + 1)) for scale in scales]
            rows = list(islice(heapq.merge(*per_scale, key=_order), size + 1))
        more = len(rows) > size
        rows = rows[:size]
        next_cursor = None
        if more:
            last = rows[-1]
            position = {"t": iso_timestamp(last.start_time), "d": str(last.duration_seconds), "i": str(last.id)}
            next_cursor = encode_cursor(self._cursor_secret(), ["memories", user_id], position | self._filters(query))
        return MemoriesPage(memories=[Memory.model_validate(_memory_fields(r)) for r in rows], next_cursor=next_cursor)

    # --- one memory -----------------------------------------------------------------------------------------

    def get_memory(self, user_id: str, memory_id: str) -> MemoryDetail:
        """One of the caller's memories with its facts and media; Forbidden when it is not the caller's."""
        try:
            segment_id = uuid.UUID(memory_id)
        except ValueError as exc:
            raise Forbidden(NOT_YOURS) from exc
        subject, obj = aliased(Entity), aliased(Entity)
        with self.db.unit_of_work(user_id) as session:
            row = session.scalars(select(Segment).where(Segment.id == segment_id, Segment.user_id == user_id)).first()
            if row is None:
                raise Forbidden(NOT_YOURS)
            facts = session.execute(
                select(Triple, subject, obj)
                .join(subject, subject.id == Triple.subject_entity_id)
                .outerjoin(obj, obj.id == Triple.object_entity_id)
                .where(Triple.segment_id == segment_id, Triple.user_id == user_id)
                .order_by(Triple.created_at, Triple.id)
            ).all()
        entities: dict[str, MemoryEntity] = {}
        triples = []
        for triple, subj, target in facts:
            for entity in (subj, target):
                if entity is not None:
                    entities.setdefault(str(entity.id), MemoryEntity(id=str(entity.id), name=_name(entity)))
            triples.append(
                MemoryTriple(
                    id=str(triple.id),
                    subject=_name(subj),
                    predicate=triple.predicate,
                    object=_name(target) if target is not None else (triple.object_literal or ""),
                    memory_type=triple.memory_type.value,
                    valid=triple.invalidated_at is None,
                )
            )
        return MemoryDetail.model_validate(
            {
                **_memory_fields(row),
                "transcript": row.transcript,
                "entities": list(entities.values()),
                "triples": triples,
                "media": self._media(row),
            }
        )

    def _media(self, row: Segment) -> list[MediaLink]:
        """GET URLs of a window's frames and audio, when the store can presign (S3); none otherwise."""
        if row.duration_seconds != self.settings.window_seconds or not row.s3_frames_key:
            return []
        if not isinstance(self.store, PresignsDownloads):
            return []
        expiry = self.settings.memory_media_url_expiry_s
        prefix = row.s3_frames_key
        return [
            MediaLink(name=key.removeprefix(prefix), url=self.store.presign_get(key, expiry), expires_in_s=expiry)
            for key in self.store.list(prefix)
        ]

    # --- a session's ingest status --------------------------------------------------------------------------

    def session_status(self, user_id: str, session_id: str) -> SessionStatus:
        """The session's windows and where each one's ingest stands; Forbidden when it is not the caller's.

        A window the catalog announced but no ingest has started on yet is `pending`; a pending window with
        frames and no ingest holding it is `waiting_for_gpu` while the GPU it needs is down.
        """
        if not re.fullmatch(SESSION_ID_PATTERN, session_id):
            raise Forbidden(SESSION_NOT_YOURS)
        info = self.sessions.get(session_id)
        if info is not None and info.user_id != user_id:
            raise Forbidden(SESSION_NOT_YOURS)
        with self.db.unit_of_work(user_id) as session:
            rows = list(
                session.scalars(
                    select(Segment)
                    .where(
                        Segment.user_id == user_id,
                        Segment.session_id == session_id,
                        Segment.duration_seconds == self.settings.window_seconds,
                    )
                    .order_by(Segment.window_index)
                )
            )
        if info is None and not rows:
            raise Forbidden(SESSION_NOT_YOURS)
        windows = self._windows(info, rows)
        counts = {status: 0 for status in ("pending", "complete", "failed", "waiting_for_gpu")}
        for window in windows:
            counts[window.status] += 1
        return SessionStatus(
            session_id=session_id,
            ended=bool(info and info.ended),
            counts=SessionCounts(**counts),
            windows=windows,
        )

    def _windows(self, info: SessionInfo | None, rows: list[Segment]) -> list[SessionWindow]:
        waits = [r for r in rows if _may_wait_for_gpu(r)]
        gpu_down = bool(waits) and self.gpu_waiting()
        by_index: dict[int, SessionWindow] = {}
        for row in rows:
            status = ProcessingStatus(row.processing_status).value
            by_index[row.window_index] = SessionWindow(
                window_index=row.window_index,
                status="waiting_for_gpu" if gpu_down and _may_wait_for_gpu(row) else status,
                start_time=iso_timestamp(row.start_time),
                end_time=iso_timestamp(row.end_time),
                memory_id=str(row.id),
            )
        for index in info.windows() if info else {}:
            if index in by_index:
                continue
            span = (
                window_span(info.created_at, index, self.settings.window_seconds) if info and info.created_at else None
            )
            by_index[index] = SessionWindow(
                window_index=index,
                status="pending",
                start_time=iso_timestamp(span[0]) if span else None,
                end_time=iso_timestamp(span[1]) if span else None,
                memory_id=None,
            )
        return [by_index[i] for i in sorted(by_index)]


def _order(row: Segment) -> tuple[datetime, int, uuid.UUID]:
    return row.start_time, row.duration_seconds, row.id


def _may_wait_for_gpu(row: Segment) -> bool:
    """Pending, with frames, and no ingest holding it: what a GPU outage leaves behind."""
    return row.processing_status == ProcessingStatus.PENDING and row.claim_token is None and bool(row.s3_frames_key)


def _name(entity: Entity) -> str:
    return entity.canonical_name or entity.surface_form
