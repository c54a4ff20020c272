"""IngestWindowFunction's core (spec 000 lambda_handler steps 1–11) for one 30-second window."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from sqlalchemy import select

from worldmm.config import Profile, Settings
from worldmm.db.models import ProcessingStatus, Segment
from worldmm.errors import GpuUnavailableError
from worldmm.ingest.enrichment import (
    ClaimLostError,
    ClaimStatus,
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
from worldmm.ingest.sessions.port import created_at_of, owned_session, window_span
from worldmm.ingest.steplog import log_step
from worldmm.media.frames import (
    find_window_audio,
    list_frame_keys,
    load_frames,
    transcribe_window,
    window_prefix,
)

if TYPE_CHECKING:
    from worldmm.ingest.port import WindowPorts

logger = Logger(child=True)


UNAVAILABLE_HOSTS = ("0.0.0.0",)


def gpu_required(settings: Settings) -> bool:
    """Whether a window with frames needs the GPU worker up (INGEST_REQUIRES_GPU; default: aws profile)."""
    if settings.ingest_requires_gpu is not None:
        return settings.ingest_requires_gpu
    return settings.worldmm_profile == Profile.AWS


def require_gpu(services: WindowPorts, segment_id: uuid.UUID) -> str:
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


def _gpu_sentinel(services: WindowPorts) -> str:
    """Why there was no worker URL: the GPU instance parameter's value as read (aws: `none`, `absent`, a
    stopped instance's id, ...); `none` elsewhere (no GPU_WORKER_URL, nothing to discover)."""
    if services.settings.worldmm_profile != Profile.AWS:
        return "none"
    from worldmm.gpu.discovery import gpu_sentinel

    try:
        return gpu_sentinel(services.settings)
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
                Segment.duration_seconds == services.settings.window_seconds,
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

    from worldmm.ingest.sessions.port import session_info
    from worldmm.ingest.summary_schedule import on_session_end

    info = session_info(services, session_id)
    if info is None or not info.ended:
        return
    with services.db.unit_of_work(user_id) as session:
        unfinished = session.scalar(
            select(func.count()).where(
                Segment.session_id == session_id,
                Segment.duration_seconds == services.settings.window_seconds,
                Segment.processing_status != ProcessingStatus.COMPLETE,
            )
        )
    if not unfinished:
        on_session_end(services, user_id, session_id)


def ingest_window(services: WindowPorts, event: IngestWindowEvent) -> IngestWindowSuccess:
    """Ingest one window: raw material → pending row → caption, entities, triples, visual → complete.

    Raises GpuUnavailableError (row left pending) or the failing step's error (row marked failed); both
    route the event to the DLQ. Safe to run any number of times, concurrently.
    """
    settings = services.settings
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

    # Idempotency (step 2) is decided by the claim below, which reports a complete row in the same round
    # trip that would create the pending one; only the no-frames exit needs its own look-up first.
    keys = list_frame_keys(services.store, session_id, index)
    if event.frameCount > 0 and not keys:
        existing = find_window_segment(services, user_id, session_id, index)
        if existing is not None and existing[1] == ProcessingStatus.COMPLETE:
            log_step(logger, "already_processed", segment_id=str(existing[0]))
            _window_complete(services, user_id, session_id, index)
            return IngestWindowAlreadyProcessed(segment_id=str(existing[0]))
        log_step(logger, "no_frames", session_id=session_id, window_index=index)
        return IngestWindowSkipped(reason="no_frames")
    audio_only = not keys

    start, end = window_span(created_at_of(info), index, settings.window_seconds)
    claim = claim_segment(
        services,
        user_id=user_id,
        session_id=session_id,
        window_index=index,
        duration_seconds=settings.window_seconds,
        start_time=start,
        end_time=end,
        frame_count=len(keys),
        s3_frames_key=window_prefix(session_id, index) if keys else None,
    )
    if claim.status == ClaimStatus.COMPLETE:
        log_step(logger, "already_processed", segment_id=str(claim.segment_id))
        # A run killed between completing the window and closing its summaries is resumed here.
        _window_complete(services, user_id, session_id, index)
        return IngestWindowAlreadyProcessed(segment_id=str(claim.segment_id))
    if claim.status == ClaimStatus.FORGOTTEN:
        # The user erased this span (or session) already: what landed since goes too, nothing is written.
        erased = services.store.delete_prefix(window_prefix(session_id, index))  # type: ignore[attr-defined]
        log_step(logger, "forgotten_window_erased", session_id=session_id, window_index=index, objects=erased)
        return IngestWindowSkipped(reason="forgotten")
    if claim.status == ClaimStatus.BUSY:
        log_step(logger, "window_in_progress", segment_id=str(claim.segment_id))
        return IngestWindowSkipped(reason="in_progress")
    if claim.status == ClaimStatus.EXHAUSTED:
        return IngestWindowSkipped(reason="attempts_exhausted")
    segment_id, token = claim.segment_id, claim.claim_token

    try:
        if not audio_only and gpu_required(settings):
            require_gpu(services, segment_id)  # before transcription: a GPU outage costs no Whisper calls
        frames, frame_keys = load_frames(services.store, keys, settings.sample_frames)
        log_step(logger, "frames_loaded", frame_count=len(frames))
        audio = find_window_audio(services.store, session_id, index)
        log_step(logger, "audio_loaded", has_audio=audio is not None)
        transcript = ""
        if audio is not None:
            transcript = transcribe_window(services.transcriber, audio, index, settings.window_seconds)
            log_step(logger, "transcription_complete", transcript_length=len(transcript))

        if audio_only and not (settings.enrich_audio_only and transcript.strip()):
            complete_without_enrichment(services, user_id, segment_id, token, transcript)
            log_step(
                logger,
                "completed",
                segment_id=str(segment_id),
                entity_count=0,
                triple_count=0,
                visual_stored=False,
            )
            _window_complete(services, user_id, session_id, index)
            return IngestWindowAudioOnly(segmentId=str(segment_id))

        material = WindowMaterial(frames=frames, frame_keys=frame_keys, transcript=transcript)
        result = enrich_segment(services, user_id, segment_id, material, claim_token=token)
    except GpuUnavailableError:
        release_claim(services, user_id, segment_id, token)  # stays pending for the DLQ consumer
        services.gpu_demand.wake("ingest")  # the controller starts the GPU; the DLQ holds the window till then
        raise
    except ClaimLostError:
        log_step(logger, "claim_lost", level="warning", segment_id=str(segment_id))
        return IngestWindowSkipped(reason="claim_lost")
    except Exception as exc:
        release_claim(services, user_id, segment_id, token, error=f"{type(exc).__name__}: {exc}")
        # spec 000 gpuException (and any other step failing): the window is `failed`, the event goes to the DLQ.
        log_step(
            logger,
            "window_failed",
            level="error",
            segment_id=str(segment_id),
            error_type=type(exc).__name__,
            error=str(exc)[:500],
        )
        raise

    log_step(
        logger,
        "completed",
        segment_id=str(segment_id),
        entity_count=result.entity_count,
        triple_count=result.triple_count,
        visual_stored=result.visual_stored,
    )
    _window_complete(services, user_id, session_id, index)
    return IngestWindowEnriched(
        segmentId=str(segment_id),
        entityCount=result.entity_count,
        tripleCount=result.triple_count,
        visualStored=result.visual_stored,
    )
