"""One 30-second window, processed the same way on every path that brings one.

`process_window` is the window routine: claim the window's row → load its frames → obtain its words →
enrich it (or complete it with its transcript alone) → release the claim on failure → the
window-complete hook. Its callers differ only in where the material comes from and how the words are
obtained (`WindowSource`), whether they may wait for the GPU worker, and what follows a complete window:
`ingest_window` here (IngestWindowFunction, spec 000 lambda_handler steps 1–11: the window's own audio
chunk is transcribed) and `worldmm.ingest.session` (a recorded session directory: the full recording's
transcript is sliced to the window, else the window's chunk is transcribed).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from sqlalchemy import select

from worldmm.config import Profile
from worldmm.db.models import ProcessingStatus, Segment
from worldmm.errors import GpuUnavailableError
from worldmm.ingest.app_events import settle_events
from worldmm.ingest.catalog.port import created_at_of, owned_session, window_span
from worldmm.ingest.enrichment import (
    ClaimLostError,
    ClaimStatus,
    EnrichmentResult,
    WindowMaterial,
    claim_segment,
    complete_without_enrichment,
    enrich_segment,
    release_claim,
)
from worldmm.ingest.events import (
    EventRejected,
    IngestWindowAlreadyProcessed,
    IngestWindowAudioOnly,
    IngestWindowEnriched,
    IngestWindowEvent,
    IngestWindowSkipped,
    IngestWindowSuccess,
)
from worldmm.ingest.steplog import log_step
from worldmm.media.frames import (
    find_window_audio,
    list_frame_keys,
    load_frames,
    transcribe_window,
    window_prefix,
)

if TYPE_CHECKING:
    from worldmm.ingest.port import GpuWaitPorts, WindowPorts, WindowProcessPorts
    from worldmm.media.objects import ObjectStore
    from worldmm.media.transcription.port import Transcript

logger = Logger(child=True)


UNAVAILABLE_HOSTS = ("0.0.0.0",)


def require_gpu(services: GpuWaitPorts, segment_id: uuid.UUID) -> str:
    """The GPU worker URL (steps 7–8), or GpuUnavailableError when there is none."""
    url = services.gpu_url()
    if url is None or any(host in url for host in UNAVAILABLE_HOSTS):
        sentinel = url if url is not None else _gpu_sentinel(services)
        log_step(
            logger,
            "gpu_unavailable_raised",
            level="warning",
            segment_id=str(segment_id),
            gpu_sentinel=sentinel,
        )
        raise GpuUnavailableError("GPU worker unavailable", sentinel=sentinel)
    return url


def _gpu_sentinel(services: GpuWaitPorts) -> str:
    """Why there was no worker URL: the GPU instance parameter's value as read (aws: `none`, `absent`, a
    stopped instance's id, ...); `none` elsewhere (no GPU_WORKER_URL, nothing to discover)."""
    if services.ingest_settings.worldmm_profile != Profile.AWS:
        return "none"
    try:
        return services.gpu_sentinel()
    except Exception as exc:  # the log field must not replace the error being raised
        return f"unreadable ({type(exc).__name__})"


def find_window_segment(
    services: WindowPorts, user_id: str, session_id: str, window_index: int
) -> tuple[uuid.UUID, ProcessingStatus] | None:
    """The window's 30 s segment id and status, if a row exists."""
    with services.db.unit_of_work(user_id) as session:
        row = session.execute(
            select(Segment.id, Segment.processing_status).where(
                Segment.user_id == user_id,
                Segment.session_id == session_id,
                Segment.window_index == window_index,
                Segment.duration_seconds == services.ingest_settings.window_seconds,
            )
        ).first()
    return (row[0], row[1]) if row else None


def _window_complete(services: WindowPorts, user_id: str, session_id: str, window_index: int) -> None:
    """Multiscale hook: the window's summaries may be ready. The window itself is already durable."""
    from worldmm.ingest.summary_schedule import on_window_complete

    try:
        on_window_complete(services, user_id, session_id, window_index)
        _close_ended_session(services, user_id, session_id)
    except Exception as exc:
        # The window is durable and its result stands; the summary is left pending or failed, and is
        # redone by the next window, the session end, or the reaper (which re-invokes one of its windows).
        from worldmm.observability import count

        count("SummaryFailed")
        logger.exception("multiscale_failed", extra={"session_id": session_id, "window_index": window_index})
        logger.debug("multiscale_error", extra={"error": str(exc)})


def _close_ended_session(services: WindowPorts, user_id: str, session_id: str) -> None:
    """After the session ended (capture's end call), the last window to complete closes partial summaries."""
    from sqlalchemy import func

    from worldmm.ingest.catalog.port import session_info
    from worldmm.ingest.summary_schedule import on_session_end

    info = session_info(services, session_id)
    if info is None or not info.ended:
        return
    with services.db.unit_of_work(user_id) as session:
        unfinished = session.scalar(
            select(func.count()).where(
                Segment.session_id == session_id,
                Segment.duration_seconds == services.ingest_settings.window_seconds,
                Segment.processing_status != ProcessingStatus.COMPLETE,
            )
        )
    if not unfinished:
        on_session_end(services, user_id, session_id)


@dataclass(frozen=True)
class WindowSource:
    """Where one window's material comes from and how its words are obtained.

    Frames (and the window's own audio chunk) are read from `store` under `sessions/{id}/window_{n}/`.
    With `recording` (a whole session's transcript, transcribed once) the window's words are its span of
    it, `recording_offset_s` being the recording's time at the video's start; without, the window's audio
    is found in `store` and transcribed.
    """

    store: ObjectStore
    frame_keys: list[str]
    recording: Transcript | None = None
    recording_offset_s: float = 0.0


class WindowOutcome(StrEnum):
    """What `process_window` came to."""

    ENRICHED = "enriched"  # captioned, entities, triples (and visual) written: complete
    TRANSCRIPT_ONLY = "transcript_only"  # complete with its transcript alone (spec 000 audio-only, enriched=false)
    ALREADY_COMPLETE = "already_complete"  # complete before this run: nothing redone but the complete hook
    FORGOTTEN = "forgotten"  # in a span or session the user erased: nothing written
    BUSY = "busy"  # another invocation holds a live claim
    EXHAUSTED = "exhausted"  # claimed INGEST_MAX_ATTEMPTS times already: left failed
    CLAIM_LOST = "claim_lost"  # another invocation took the claim over meanwhile; our results were dropped


_NOT_CLAIMED = {
    ClaimStatus.FORGOTTEN: WindowOutcome.FORGOTTEN,
    ClaimStatus.BUSY: WindowOutcome.BUSY,
    ClaimStatus.EXHAUSTED: WindowOutcome.EXHAUSTED,
}


@dataclass(frozen=True)
class WindowResult:
    """The outcome of one window, its segment id, and what enrichment stored (ENRICHED only)."""

    outcome: WindowOutcome
    segment_id: uuid.UUID
    enrichment: EnrichmentResult | None = None


def process_window(
    services: WindowProcessPorts,
    user_id: str,
    session_id: str,
    window_index: int,
    *,
    created_at: datetime,
    source: WindowSource,
    on_complete: Callable[[], object],
    gpu: GpuWaitPorts | None = None,
) -> WindowResult:
    """Claim → load frames → words → enrich (or transcript only) → complete, then `on_complete`.

    `on_complete` (the summary scheduling hook) also runs for a window already complete, so a run killed
    between completing the window and closing its summaries is resumed. `gpu` is given by a path that can
    wait for the GPU worker (the live one: its event waits in the DLQ): a window with frames then needs
    the worker first where it is required, and GpuUnavailableError leaves the row pending, wakes the
    worker and propagates. Any other failure (GpuUnavailableError too, without `gpu`) marks the row
    failed and propagates. Safe to run any number of times, concurrently.
    """
    settings = services.ingest_settings
    keys = source.frame_keys
    start, end = window_span(created_at, window_index, settings.window_seconds)
    claim = claim_segment(
        services,
        user_id=user_id,
        session_id=session_id,
        window_index=window_index,
        duration_seconds=settings.window_seconds,
        start_time=start,
        end_time=end,
        frame_count=len(keys),
        s3_frames_key=window_prefix(session_id, window_index) if keys else None,
    )
    if claim.status == ClaimStatus.COMPLETE:
        log_step(logger, "already_processed", segment_id=str(claim.segment_id))
        on_complete()
        return WindowResult(WindowOutcome.ALREADY_COMPLETE, claim.segment_id)
    if claim.status == ClaimStatus.BUSY:
        log_step(logger, "window_in_progress", segment_id=str(claim.segment_id))
    if not claim.claimed:
        return WindowResult(_NOT_CLAIMED[claim.status], claim.segment_id)
    segment_id, token = claim.segment_id, claim.claim_token

    try:
        enrichment = _enrich_claimed(services, user_id, session_id, window_index, source, segment_id, token, gpu)
    except ClaimLostError:
        log_step(logger, "claim_lost", level="warning", segment_id=str(segment_id))
        return WindowResult(WindowOutcome.CLAIM_LOST, segment_id)
    except Exception as exc:
        _give_up_claim(services, user_id, segment_id, token, exc, gpu)
        raise

    _log_completed(segment_id, enrichment)
    on_complete()
    if enrichment is None:
        return WindowResult(WindowOutcome.TRANSCRIPT_ONLY, segment_id)
    return WindowResult(WindowOutcome.ENRICHED, segment_id, enrichment)


def _enrich_claimed(
    services: WindowProcessPorts,
    user_id: str,
    session_id: str,
    window_index: int,
    source: WindowSource,
    segment_id: uuid.UUID,
    token: uuid.UUID | None,
    gpu: GpuWaitPorts | None,
) -> EnrichmentResult | None:
    """Frames → words → enrich the claimed window, or complete it with its transcript alone (None)."""
    settings = services.ingest_settings
    keys = source.frame_keys
    if keys and gpu is not None and settings.gpu_required:
        require_gpu(gpu, segment_id)  # before transcription: a GPU outage costs no Whisper calls
    frames, frame_keys = load_frames(source.store, keys, settings.sample_frames)
    log_step(logger, "frames_loaded", frame_count=len(frames))
    transcript = _window_transcript(services, source, session_id, window_index)
    if keys or (settings.enrich_audio_only and transcript.strip()):
        material = WindowMaterial(frames=frames, frame_keys=frame_keys, transcript=transcript)
        return enrich_segment(services, user_id, segment_id, material, claim_token=token)
    # spec 000's audio-only path: the transcript alone, enriched=false
    complete_without_enrichment(services, user_id, segment_id, token, transcript)
    return None


def _give_up_claim(
    services: WindowProcessPorts,
    user_id: str,
    segment_id: uuid.UUID,
    token: uuid.UUID | None,
    exc: Exception,
    gpu: GpuWaitPorts | None,
) -> None:
    """Release the claim after `exc`: pending (and the GPU woken) for a GPU outage the DLQ waits on, else failed."""
    if gpu is not None and isinstance(exc, GpuUnavailableError):
        release_claim(services, user_id, segment_id, token)  # stays pending for the DLQ consumer
        gpu.gpu_demand.wake("ingest")  # the controller starts the GPU; the DLQ holds the window till then
        return
    release_claim(services, user_id, segment_id, token, error=f"{type(exc).__name__}: {exc}")
    # spec 000 gpuException (and any other step failing): the window is `failed`, the error propagates.
    log_step(
        logger,
        "window_failed",
        level="error",
        segment_id=str(segment_id),
        error_type=type(exc).__name__,
        error=str(exc)[:500],
    )


def _log_completed(segment_id: uuid.UUID, enrichment: EnrichmentResult | None) -> None:
    """The window's `completed` step, with what enrichment stored (nothing for a transcript-only window)."""
    log_step(
        logger,
        "completed",
        segment_id=str(segment_id),
        entity_count=enrichment.entity_count if enrichment else 0,
        triple_count=enrichment.triple_count if enrichment else 0,
        visual_stored=enrichment.visual_stored if enrichment else False,
    )


def _window_transcript(services: WindowProcessPorts, source: WindowSource, session_id: str, window_index: int) -> str:
    """The window's words: its span of the whole recording when there is one, else its own audio transcribed."""
    seconds = services.ingest_settings.window_seconds
    if source.recording is not None:
        start = window_index * seconds + source.recording_offset_s
        return source.recording.window(start, start + seconds)
    audio = find_window_audio(source.store, session_id, window_index)
    log_step(logger, "audio_loaded", has_audio=audio is not None)
    if audio is None:
        return ""
    transcript = transcribe_window(services.transcriber, audio, window_index, seconds)
    log_step(logger, "transcription_complete", transcript_length=len(transcript))
    return transcript


_SKIP_REASONS = {
    WindowOutcome.BUSY: "in_progress",
    WindowOutcome.EXHAUSTED: "attempts_exhausted",
    WindowOutcome.CLAIM_LOST: "claim_lost",
}


def ingest_window(services: WindowPorts, event: IngestWindowEvent) -> IngestWindowSuccess:
    """Ingest one window: raw material → pending row → caption, entities, triples, visual → complete.

    Raises GpuUnavailableError (row left pending) or the failing step's error (row marked failed); both
    route the event to the DLQ. Safe to run any number of times, concurrently.
    """
    user_id, session_id, index = event.userId, event.sessionId, event.windowIndex
    log_step(logger, "invoked", session_id=session_id, window_index=index, frame_count=event.frameCount)
    try:
        # Only the session's own user: an event naming another user never reads this session's material.
        info = owned_session(services, session_id, user_id)
    except EventRejected as rejected:
        log_step(
            logger,
            "event_rejected",
            level="warning",
            reason=rejected.reason,
            session_id=session_id,
            window_index=index,
        )
        return IngestWindowSkipped(reason=rejected.reason)

    # Idempotency (step 2) is decided by the claim, which reports a complete row in the same round trip
    # that would create the pending one; only the no-frames exit needs its own look-up first.
    keys = list_frame_keys(services.store, session_id, index)
    if event.frameCount > 0 and not keys:
        return _without_frames(services, user_id, session_id, index)

    try:
        result = process_window(
            services,
            user_id,
            session_id,
            index,
            created_at=created_at_of(info),
            source=WindowSource(services.store, keys),
            on_complete=partial(_window_complete, services, user_id, session_id, index),
            gpu=services,
        )
    finally:  # the outcome committed (or not): its events out, the session's too when this was its last window
        settle_events(services, user_id, session_id, info)
    return _response(services, result, session_id, index)


def _without_frames(services: WindowPorts, user_id: str, session_id: str, index: int) -> IngestWindowSuccess:
    """An event announcing frames that are not there: already processed when its row is complete, else skipped."""
    existing = find_window_segment(services, user_id, session_id, index)
    if existing is not None and existing[1] == ProcessingStatus.COMPLETE:
        log_step(logger, "already_processed", segment_id=str(existing[0]))
        _window_complete(services, user_id, session_id, index)
        return IngestWindowAlreadyProcessed(segment_id=str(existing[0]))
    log_step(logger, "no_frames", session_id=session_id, window_index=index)
    return IngestWindowSkipped(reason="no_frames")


def _response(services: WindowPorts, result: WindowResult, session_id: str, index: int) -> IngestWindowSuccess:
    """The handler's answer for a processed window; a forgotten window's landed objects are erased first."""
    segment_id = str(result.segment_id)
    if result.enrichment is not None:
        return IngestWindowEnriched(
            segmentId=segment_id,
            entityCount=result.enrichment.entity_count,
            tripleCount=result.enrichment.triple_count,
            visualStored=result.enrichment.visual_stored,
        )
    if result.outcome == WindowOutcome.TRANSCRIPT_ONLY:
        return IngestWindowAudioOnly(segmentId=segment_id)
    if result.outcome == WindowOutcome.ALREADY_COMPLETE:
        return IngestWindowAlreadyProcessed(segment_id=segment_id)
    if result.outcome == WindowOutcome.FORGOTTEN:
        # The user erased this span (or session) already: what landed since goes too, nothing is written.
        erased = services.store.delete_prefix(window_prefix(session_id, index))  # type: ignore[attr-defined]
        log_step(logger, "forgotten_window_erased", session_id=session_id, window_index=index, objects=erased)
        return IngestWindowSkipped(reason="forgotten")
    return IngestWindowSkipped(reason=_SKIP_REASONS[result.outcome])
