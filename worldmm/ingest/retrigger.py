"""RetriggerIngestFunction's core: choose a session's windows and invoke the window ingest for each."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from aws_lambda_powertools import Logger
from sqlalchemy import func, select, update

from worldmm.crashpoints import crash_point
from worldmm.db.models import ProcessingStatus, Segment
from worldmm.db.port import DatabasePorts
from worldmm.ingest.catalog.port import SessionCatalog, SessionInfo, owned_session
from worldmm.ingest.events import MAX_RETRIGGER_WINDOWS, IngestWindowEvent, RetriggerEvent, RetriggerResponse
from worldmm.ingest.settings import IngestSettingsPorts

if TYPE_CHECKING:
    from worldmm.ingest.invoker.port import FunctionInvoker

logger = Logger(child=True)


class RetriggerPorts(DatabasePorts, IngestSettingsPorts, Protocol):
    """The ports a retrigger uses: the session catalog, the database and the function invoker."""

    @property
    def sessions(self) -> SessionCatalog: ...

    @property
    def invoker(self) -> FunctionInvoker: ...


def _db_windows(services: RetriggerPorts, user_id: str, session_id: str) -> dict[int, ProcessingStatus]:
    """Window index → status of the session's 30 s segments."""
    with services.db.unit_of_work(user_id) as session:
        rows = session.execute(
            select(Segment.window_index, Segment.processing_status).where(
                Segment.user_id == user_id,
                Segment.session_id == session_id,
                Segment.duration_seconds == services.ingest_settings.window_seconds,
            )
        )
        return {index: status for index, status in rows}


def reset_segments_to_pending(services: RetriggerPorts, user_id: str, session_id: str, windows: list[int]) -> int:
    """Force: complete → pending, so the ingest's idempotency guard lets the windows through again; and every one
    of the windows starts its attempt count over (INGEST_MAX_ATTEMPTS: a forced run is asked for)."""
    windows_of_session = (
        Segment.user_id == user_id,
        Segment.session_id == session_id,
        Segment.duration_seconds == services.ingest_settings.window_seconds,
        Segment.window_index.in_(windows),
    )
    with services.db.unit_of_work(user_id) as session:
        session.execute(
            update(Segment)
            .where(*windows_of_session, Segment.processing_status != ProcessingStatus.COMPLETE)
            .values(ingest_attempts=0)
        )
        result = session.execute(
            update(Segment)
            .where(*windows_of_session, Segment.processing_status == ProcessingStatus.COMPLETE)
            .values(processing_status=ProcessingStatus.PENDING, ingest_attempts=0, updated_at=func.now())
            .returning(Segment.id)
        )
        return len(result.all())


def resolve_windows(
    services: RetriggerPorts, event: RetriggerEvent, info: SessionInfo | None
) -> tuple[list[int], list[int]]:
    """(to trigger, skipped): explicit indices; else every window (force) or every non-complete one.

    Windows come from PostgreSQL joined with the session catalog (a window whose first invocation was
    lost has no row yet); when the database query fails, from the catalog alone.
    """
    if event.windowIndices is not None:
        return sorted(set(event.windowIndices)), []
    catalog = set(info.windows()) if info else set()
    try:
        statuses = _db_windows(services, event.userId, event.sessionId)
    except Exception as exc:
        logger.warning("retrigger_db_failed", extra={"session_id": event.sessionId, "error": str(exc)})
        return sorted(catalog), []
    every = sorted(catalog | set(statuses))
    if event.force:
        return every, []
    done = {i for i, s in statuses.items() if s == ProcessingStatus.COMPLETE}
    return [i for i in every if i not in done], sorted(done)


def retrigger(services: RetriggerPorts, event: RetriggerEvent) -> RetriggerResponse:
    """Resolve the windows, reset them when forced, and async-invoke IngestWindowFunction for each.

    Only for a session that exists and is the event's user's (EventRejected otherwise, before anything
    is read or invoked); at most MAX_RETRIGGER_WINDOWS windows per call, the rest reported as skipped.
    """
    settings = services.ingest_settings
    info = owned_session(services, event.sessionId, event.userId)
    windows, skipped = resolve_windows(services, event, info)
    if len(windows) > MAX_RETRIGGER_WINDOWS:
        logger.warning(
            "retrigger_capped",
            extra={"session_id": event.sessionId, "windows": len(windows), "cap": MAX_RETRIGGER_WINDOWS},
        )
        skipped = skipped + windows[MAX_RETRIGGER_WINDOWS:]
        windows = windows[:MAX_RETRIGGER_WINDOWS]
    if event.force and windows:
        try:
            reset = reset_segments_to_pending(services, event.userId, event.sessionId, windows)
            logger.info("segments_reset_to_pending", extra={"session_id": event.sessionId, "count": reset})
            crash_point("retrigger.reset")
        except Exception as exc:
            logger.warning("retrigger_reset_failed", extra={"session_id": event.sessionId, "error": str(exc)})
    triggered: list[int] = []
    frame_counts = info.frame_counts if info else {}
    for index in windows:
        payload = IngestWindowEvent(
            sessionId=event.sessionId,
            userId=event.userId,
            windowIndex=index,
            frameCount=frame_counts.get(index, 0),  # 0: the ingest lists the window's frames itself
        ).model_dump()
        try:
            services.invoker.invoke_async(settings.ingest_function_name, payload)
        except Exception as exc:
            logger.warning("retrigger_invoke_failed", extra={"window_index": index, "error": str(exc)})
            skipped.append(index)
            continue
        triggered.append(index)
        crash_point("retrigger.invoked")
    logger.info(
        "retriggered",
        extra={"session_id": event.sessionId, "triggered": triggered, "skipped": sorted(skipped)},
    )
    return RetriggerResponse(triggered=triggered, skipped=sorted(skipped))
