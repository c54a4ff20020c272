"""The window routine's pieces (worldmm.ingest.window.process_window, run by the live and offline paths).

`claim_segment` writes (or takes over) a window's `pending` row before any model call; `enrich_segment`
runs the model calls with no transaction open, then writes every derived row and marks the segment
complete in one short transaction that first checks the claim is still ours, so concurrent or retried
invocations leave exactly one set of triples.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools import Logger
from sqlalchemy import Table, func, select, update
from sqlalchemy.dialects.postgresql import insert

from worldmm.config import CaptionMode
from worldmm.db.models import MemoryType, ProcessingStatus, Segment, VisualEmbedding
from worldmm.db.queries.segments import complete_segment
from worldmm.db.tombstones import is_forgotten, lock_claiming
from worldmm.errors import UnavailableError, WorldMMError
from worldmm.ingest.claim_owner import owner_for, owner_gone
from worldmm.ingest.steplog import log_step
from worldmm.llm.usage import UsageLog
from worldmm.media.captioner import WindowCaption, caption_window
from worldmm.memory.entities import delete_unreferenced_entities, resolve_entities
from worldmm.memory.episodic.segment_text import segment_memory_text
from worldmm.memory.episodic.triples import (
    PreparedTriple,
    delete_segment_derivatives,
    insert_triples,
    prepare_triples,
    triple_entity_forms,
)

if TYPE_CHECKING:
    from worldmm.ingest.port import EnrichmentPorts, EpisodicPorts
    from worldmm.ingest.settings import IngestSettings

logger = Logger(child=True)


MAX_ERROR_CHARS = 2000
# The hot path's statements on the table itself (Core): no ORM bookkeeping for rows it never loads.
_SEGMENTS = cast(Table, Segment.__table__)
_VISUAL = cast(Table, VisualEmbedding.__table__)


@dataclass(frozen=True)
class WindowMaterial:
    """What a window brings: the sampled frames (may be empty), their keys, and its transcript."""

    frames: list[bytes]
    frame_keys: list[str]
    transcript: str


@dataclass(frozen=True)
class EnrichmentResult:
    caption: str
    entity_count: int
    triple_count: int
    visual_stored: bool


class ClaimStatus(StrEnum):
    CLAIMED = "claimed"  # this invocation owns the row until it completes or releases it
    COMPLETE = "complete"  # already enriched; nothing to do
    BUSY = "busy"  # another invocation holds a live claim
    EXHAUSTED = "exhausted"  # claimed INGEST_MAX_ATTEMPTS times already: left failed, not run again
    FORGOTTEN = "forgotten"  # the user erased this window's span or session: nothing may be written


@dataclass(frozen=True)
class ClaimResult:
    """The outcome of step 5 for one window's segment row."""

    status: ClaimStatus
    segment_id: uuid.UUID
    start_time: datetime
    end_time: datetime
    created: bool = False
    retrying: bool = False
    claim_token: uuid.UUID | None = None

    @property
    def claimed(self) -> bool:
        return self.status == ClaimStatus.CLAIMED


class ClaimLostError(WorldMMError):
    """Another invocation took over this segment (our claim expired); our results were not written."""

    status_code = 409


@dataclass
class EpisodicExtraction:
    """Entities resolved and triples prepared from one text, ready to store."""

    entity_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    triples: list[PreparedTriple] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def claim_segment(
    services: EnrichmentPorts,
    *,
    user_id: str,
    session_id: str,
    window_index: int,
    duration_seconds: int,
    start_time: datetime,
    end_time: datetime,
    **columns: Any,
) -> ClaimResult:
    """Write the `pending` row (or take over a pending/failed one, clearing its triples and embedding).

    A complete row is left alone (COMPLETE); a row claimed by a live invocation is left to it (BUSY); a
    window in a span or session the user erased is never written (FORGOTTEN: see worldmm.db.tombstones).
    A claim lives for the lease; on the local profile it also records its process (`claim_owner`) and
    is taken over at once when that process is gone. `columns` are further Segment columns to set
    (transcript, frame_count, s3_frames_key, ...).
    """
    token = uuid.uuid4()
    lease = timedelta(seconds=services.ingest_settings.ingest_claim_lease_s)
    owner = owner_for(services.ingest_settings)
    with services.db.unit_of_work(user_id) as session:
        lock_claiming(session, user_id)
        if is_forgotten(session, user_id, session_id, start_time, end_time):
            log_step(logger, "window_forgotten", session_id=session_id, window_index=window_index)
            return ClaimResult(ClaimStatus.FORGOTTEN, uuid.UUID(int=0), start_time, end_time)
        window = {
            "user_id": user_id,
            "session_id": session_id,
            "window_index": window_index,
            "duration_seconds": duration_seconds,
            "start_time": start_time,
            "end_time": end_time,
        }
        new_id = _insert_pending(session, window, token, owner, columns)
        if new_id is not None:
            log_step(logger, "segment_created", segment_id=str(new_id))
            return ClaimResult(ClaimStatus.CLAIMED, new_id, start_time, end_time, created=True, claim_token=token)
        row, live = _lock_window_row(session, window, lease)
        return _take_over(services, session, user_id, row, live, _Claimant(token, owner, columns))


@dataclass(frozen=True)
class _Claimant:
    """This invocation's claim: its token, its process (local profile) and the further columns it sets."""

    token: uuid.UUID
    owner: str | None
    columns: dict[str, Any]


def _insert_pending(
    session: Any, window: dict[str, Any], token: uuid.UUID, owner: str | None, columns: dict[str, Any]
) -> uuid.UUID | None:
    """Insert the window's `pending` row claimed by `token`; its id, or None when the window has a row."""
    new_id: uuid.UUID | None = session.execute(
        insert(_SEGMENTS)
        .values(
            id=uuid.uuid4(),
            **window,
            processing_status=ProcessingStatus.PENDING,
            claim_token=token,
            claimed_at=func.now(),
            claim_owner=owner,
            ingest_attempts=1,
            **columns,
        )
        .on_conflict_do_nothing(constraint="uq_segment_window")
        .returning(_SEGMENTS.c.id)
    ).scalar_one_or_none()
    return new_id


def _lock_window_row(session: Any, window: dict[str, Any], lease: timedelta) -> tuple[Segment, bool]:
    """The window's existing row, locked, and whether its claim is still within the lease."""
    row, live = session.execute(
        select(Segment, (Segment.claimed_at > func.now() - lease).label("live"))
        .where(
            Segment.user_id == window["user_id"],
            Segment.session_id == window["session_id"],
            Segment.window_index == window["window_index"],
            Segment.duration_seconds == window["duration_seconds"],
        )
        .with_for_update(of=Segment)
    ).one()
    return row, live


def _take_over(
    services: EnrichmentPorts, session: Any, user_id: str, row: Segment, live: bool, claimant: _Claimant
) -> ClaimResult:
    """Decide on an existing, locked row: complete, busy, exhausted, or claimed afresh for `claimant`."""
    if row.processing_status == ProcessingStatus.COMPLETE:
        return ClaimResult(ClaimStatus.COMPLETE, row.id, row.start_time, row.end_time)
    if row.claim_token is not None and live and not (claimant.owner and owner_gone(row.claim_owner)):
        return ClaimResult(ClaimStatus.BUSY, row.id, row.start_time, row.end_time)
    if row.ingest_attempts >= services.ingest_settings.ingest_max_attempts:
        _mark_exhausted(session, user_id, row)
        return ClaimResult(ClaimStatus.EXHAUSTED, row.id, row.start_time, row.end_time)
    delete_segment_derivatives(session, user_id, row.id)
    session.execute(
        update(Segment)
        .where(Segment.user_id == user_id, Segment.id == row.id)
        .values(
            processing_status=ProcessingStatus.PENDING,
            claim_token=claimant.token,
            claimed_at=func.now(),
            claim_owner=claimant.owner,
            ingest_attempts=Segment.ingest_attempts + 1,
            error=None,
            updated_at=func.now(),
            **claimant.columns,
        )
    )
    log_step(
        logger, "segment_retrying", segment_id=str(row.id), previous_status=str(row.processing_status),
        previous_owner=row.claim_owner if row.claim_token is not None else None,
    )  # fmt: skip
    return ClaimResult(
        ClaimStatus.CLAIMED, row.id, row.start_time, row.end_time, retrying=True, claim_token=claimant.token
    )


def _mark_exhausted(session: Any, user_id: str, row: Segment) -> None:
    """Leave a row claimed too often failed with its last cause (or this one), its claim cleared."""
    # Touched, so the reaper's oldest-first scan moves on.
    session.execute(
        update(Segment)
        .where(Segment.user_id == user_id, Segment.id == row.id)
        .values(
            processing_status=ProcessingStatus.FAILED,
            error=func.coalesce(Segment.error, f"attempts exhausted: claimed {row.ingest_attempts} times"),
            claim_token=None,
            claimed_at=None,
            claim_owner=None,
            updated_at=func.now(),
        )
    )
    log_step(logger, "attempts_exhausted", level="warning", segment_id=str(row.id), attempts=row.ingest_attempts)


def release_claim(
    services: EnrichmentPorts,
    user_id: str,
    segment_id: uuid.UUID,
    claim_token: uuid.UUID | None,
    *,
    error: str | None = None,
    usage: UsageLog | None = None,
) -> None:
    """Give up a claim: the row stays `pending` (retry later) or, with `error`, becomes `failed`."""
    values: dict[str, Any] = {"claim_token": None, "claimed_at": None, "claim_owner": None, "updated_at": func.now()}
    if error is not None:
        values.update(processing_status=ProcessingStatus.FAILED, error=error[:MAX_ERROR_CHARS])
    with services.db.unit_of_work(user_id) as session:
        stmt = update(Segment).where(Segment.user_id == user_id, Segment.id == segment_id)
        if claim_token is not None:
            stmt = stmt.where(Segment.claim_token == claim_token)
        session.execute(stmt.values(**values))
        if usage is not None:
            usage.flush(session, user_id, segment_id)


def complete_without_enrichment(
    services: EnrichmentPorts, user_id: str, segment_id: uuid.UUID, claim_token: uuid.UUID | None, transcript: str
) -> None:
    """Mark a window complete with only its transcript (spec 000 audio-only: enriched=false)."""
    with services.db.unit_of_work(user_id) as session:
        _check_claim(session, user_id, segment_id, claim_token)
        # The claim was proven above, its row locked: the update needs no claim filter.
        complete_segment(
            session, user_id, segment_id, None, transcript=transcript or None, enriched=False, visual_stored=False
        )


def _check_claim(session: Any, user_id: str, segment_id: uuid.UUID, claim_token: uuid.UUID | None) -> None:
    if claim_token is None:
        return
    holder = session.execute(
        select(Segment.claim_token).where(Segment.user_id == user_id, Segment.id == segment_id).with_for_update()
    ).scalar_one_or_none()
    if holder != claim_token:
        raise ClaimLostError(f"segment {segment_id} was claimed by another invocation")


def extraction_text(settings: IngestSettings, window_caption: WindowCaption, transcript: str) -> str:
    """What a window's entities and facts are read from: its caption, or, where the caption is only what was
    heard run together, the transcript's lines with their speakers (each other speaker's line after their
    name, the wearer's as said) when the transcriber tells voices apart, so that a line's "I" is its speaker."""
    if window_caption.source == CaptionMode.HEARD and settings.speaker_labels and transcript.strip():
        return transcript
    return window_caption.text


def extract_episodic(
    services: EpisodicPorts, user_id: str, text: str, usage: UsageLog, *, context: str | None = None
) -> EpisodicExtraction:
    """NER, episodic triples and entity resolution over `text` (only entity rows are written here)."""
    extraction = services.extractor.extract(text, usage)
    log_step(logger, "ner_complete", entity_count=len(extraction.entities))
    log_step(logger, "triples_extracted", triple_count=len(extraction.triples))
    if extraction.warnings:
        logger.warning("extraction_warnings", extra={"flow": "ingest_window", "warnings": extraction.warnings[:20]})
    forms = triple_entity_forms(extraction.triples, extraction.entities)
    entity_ids = resolve_entities(services, user_id, forms, context or text, usage=usage)
    prepared = prepare_triples(extraction.triples, entity_ids)
    return EpisodicExtraction(entity_ids=entity_ids, triples=prepared, warnings=extraction.warnings)


def extract_and_store_episodic(
    services: EpisodicPorts, user_id: str, segment_id: uuid.UUID, text: str
) -> tuple[int, int]:
    """NER + episodic triples from any caption or summary text, stored on `segment_id`.

    Returns (entity_count, triple_count). Used for 3 min / 10 min / 1 h summaries as well.
    """
    usage = UsageLog()
    extraction = extract_episodic(services, user_id, text, usage)
    with services.db.unit_of_work(user_id) as session:
        stored = insert_triples(session, user_id, segment_id, extraction.triples)
        scale = session.scalar(
            select(Segment.duration_seconds).where(Segment.user_id == user_id, Segment.id == segment_id)
        )
        usage.flush(session, user_id, segment_id)
    if stored and scale is not None:
        invalidate_episodic_graph(services, user_id, scale)
    return len(extraction.entity_ids), stored


def invalidate_episodic_graph(services: EpisodicPorts, user_id: str, scale: int) -> None:
    """New episodic triples at `scale`: drop that one cached graph (spec 001); a cache failure is logged.

    Without Redis the database's graph generation (bumped with the triples) already retires it.
    """
    try:
        services.graph_cache.invalidate(user_id, MemoryType.EPISODIC, [scale])
    except Exception as exc:  # a stale cache is rebuilt on its next generation check; never fail the write
        logger.warning("graph_invalidation_failed", extra={"user_id": user_id, "error": str(exc)})


def _encode_visual(services: EnrichmentPorts, segment_id: uuid.UUID, frames: list[bytes]) -> list[float] | None:
    """The clip's visual embedding, or None: failures are logged, never fatal (step 10)."""
    if not frames:
        return None
    try:
        encoder = services.visual
        vector = encoder.encode_video(frames)
        expected = services.ingest_settings.visual_embedding_dim
        if len(vector) != expected:
            raise ValueError(f"visual embedding has {len(vector)} dims, expected {expected}")
        return vector
    except UnavailableError as exc:
        log_step(logger, "embedding_skipped", segment_id=str(segment_id), reason=str(exc))
    except Exception as exc:
        log_step(logger, "embedding_failed", level="warning", segment_id=str(segment_id), error=str(exc))
    return None


def enrich_segment(
    services: EnrichmentPorts,
    user_id: str,
    segment_id: uuid.UUID,
    material: WindowMaterial,
    *,
    claim_token: uuid.UUID | None = None,
) -> EnrichmentResult:
    """Caption → NER → entity resolution → episodic triples → visual embedding → segment complete.

    With no frames the caption comes from the transcript alone. With `claim_token`, results are written
    only while that claim is still held (ClaimLostError otherwise). Usage of every model call is recorded,
    also when a later step fails.
    """
    settings = services.ingest_settings
    usage = UsageLog()
    extraction: EpisodicExtraction | None = None
    try:
        window_caption = _caption(services, segment_id, material, usage)
        caption = window_caption.text
        extraction = extract_episodic(
            services, user_id, extraction_text(settings, window_caption, material.transcript), usage, context=caption
        )
        visual = _encode_visual(services, segment_id, material.frames)
        caption_vector = services.embedder.embed([segment_memory_text(caption, material.transcript)])[0]

        with services.db.unit_of_work(user_id) as session:
            # Completing first locks the row and proves the claim is still ours (else nothing is kept).
            start_time, scale = _complete_segment(
                session, user_id, segment_id, claim_token, window_caption, caption_vector, material.transcript,
                visual_stored=visual is not None,
            )  # fmt: skip
            if claim_token is None:  # unclaimed callers replace what an earlier run stored
                delete_segment_derivatives(session, user_id, segment_id)
            # (a claimed row starts clean: claim_segment removed any earlier derivatives on takeover)
            stored = insert_triples(session, user_id, segment_id, extraction.triples)
            if visual is not None:
                _upsert_visual(session, services, user_id, segment_id, visual, start_time)
            usage.flush(session, user_id, segment_id)
    except Exception as exc:
        _after_failure(services, user_id, segment_id, usage, exc, extraction)
        raise
    if visual is not None:
        log_step(logger, "embedding_stored", segment_id=str(segment_id))
    if stored:
        invalidate_episodic_graph(services, user_id, scale)
    return EnrichmentResult(
        caption=caption,
        entity_count=len(extraction.entity_ids),
        triple_count=stored,
        visual_stored=visual is not None,
    )


def _caption(
    services: EnrichmentPorts, segment_id: uuid.UUID, material: WindowMaterial, usage: UsageLog
) -> WindowCaption:
    """The window's caption (from its frames, or its transcript alone), its model call recorded in `usage`."""
    window_caption = caption_window(
        services.llm, services.ingest_settings.caption, material.frames, material.transcript
    )
    if window_caption.response is not None:
        usage.add("caption", window_caption.response)
    log_step(
        logger, "caption_generated", segment_id=str(segment_id), caption_preview=window_caption.text[:80],
        caption_source=window_caption.source.value,
    )  # fmt: skip
    return window_caption


def _complete_segment(
    session: Any,
    user_id: str,
    segment_id: uuid.UUID,
    claim_token: uuid.UUID | None,
    window_caption: WindowCaption,
    caption_vector: list[float],
    transcript: str,
    *,
    visual_stored: bool,
) -> tuple[datetime, int]:
    """Mark the segment complete with its caption, while `claim_token` (if any) still holds it.

    Returns the segment's start time and duration; ClaimLostError when the claim is no longer ours.
    """
    completed = complete_segment(
        session,
        user_id,
        segment_id,
        claim_token,
        caption=window_caption.text,
        caption_source=window_caption.source.value,
        caption_embedding=caption_vector,
        transcript=transcript or None,
        enriched=True,
        visual_stored=visual_stored,
    )
    if completed is None:
        raise ClaimLostError(f"segment {segment_id} is no longer claimed by this invocation")
    return completed


def _upsert_visual(
    session: Any,
    services: EnrichmentPorts,
    user_id: str,
    segment_id: uuid.UUID,
    visual: list[float],
    start_time: datetime,
) -> None:
    """Store (or replace) the segment's visual embedding."""
    row = {"embedding": visual, "model": services.visual.model_id, "timestamp": start_time}
    upsert = insert(_VISUAL).values(id=uuid.uuid4(), segment_id=segment_id, user_id=user_id, **row)
    # the vector is sent once: the conflict branch takes it from the proposed row
    session.execute(
        upsert.on_conflict_do_update(constraint="uq_visual_segment", set_={k: upsert.excluded[k] for k in row})
    )


def _after_failure(
    services: EnrichmentPorts,
    user_id: str,
    segment_id: uuid.UUID,
    usage: UsageLog,
    exc: Exception,
    extraction: EpisodicExtraction | None,
) -> None:
    """What a failed enrichment still writes: the usage paid for, and no entities only the lost window named."""
    if usage.entries:  # the calls were paid for even though the window failed
        with services.db.unit_of_work(user_id) as session:
            # the segment may be gone (its span was forgotten meanwhile): the cost stays, unattributed
            exists = session.scalar(select(_SEGMENTS.c.id).where(_SEGMENTS.c.id == segment_id))
            usage.flush(session, user_id, segment_id if exists is not None else None)
    if isinstance(exc, ClaimLostError) and extraction is not None and extraction.entity_ids:
        # the entities resolved for the lost window are kept only where something else names them
        with services.db.unit_of_work(user_id) as session:
            delete_unreferenced_entities(session, user_id, set(extraction.entity_ids.values()))
