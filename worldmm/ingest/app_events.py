"""The ingest side of the app events (issue 65): `SessionProcessed` when a session is done, and publishing.

Window outcomes are recorded by the database with the status change itself (migration 0019's trigger). A
session is done when it has ended and every one of its windows is complete or failed with no attempt left;
whoever finds that records `SessionProcessed` once (its id is the session's). After each window the ingest
function publishes its user's unpublished events; what a crash or an EventBridge outage leaves unpublished
(and a session whose last window failed for good, which runs no hook) is picked up by `recover_events`,
which the reaper runs and `worldmm serve` runs in the background.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from aws_lambda_powertools import Logger
from sqlalchemy import select
from sqlalchemy.orm import Session

from worldmm.db.models import ProcessingStatus, Segment
from worldmm.db.port import DatabasePorts
from worldmm.events.outbox import prune_published, publish_in, publish_pending, record, sessions_awaiting_event
from worldmm.events.port import EventPublisher
from worldmm.ingest.catalog.port import SessionInfo, SessionPorts, session_info
from worldmm.ingest.settings import IngestSettings, IngestSettingsPorts
from worldmm.observability import count

logger = Logger(child=True)

RECOVERY_WINDOW_S = 7 * 86_400
"""How far back the recovery sweep looks for sessions whose `SessionProcessed` is missing."""
RECOVERY_MAX_SESSIONS = 500
EVENT_RETENTION_S = 14 * 86_400
"""Published events older than this are pruned (the SSE stream replays two weeks; the outbox stops growing)."""


class EventPorts(DatabasePorts, SessionPorts, IngestSettingsPorts, Protocol):
    """Recording and publishing app events: the database, the session catalog and the publisher."""

    @property
    def event_publisher(self) -> EventPublisher: ...


def _outcome(
    session: Session, settings: IngestSettings, user_id: str, session_id: str, known: Iterable[int]
) -> dict[str, int] | None:
    """The session's counts when every window (those with rows and those `known` to the catalog) is complete
    or failed with no attempt left; None while one is still to come."""
    rows = session.execute(
        select(Segment.window_index, Segment.processing_status, Segment.ingest_attempts).where(
            Segment.user_id == user_id,
            Segment.session_id == session_id,
            Segment.duration_seconds == settings.window_seconds,
        )
    ).all()
    complete = {r.window_index for r in rows if r.processing_status == ProcessingStatus.COMPLETE}
    failed = {
        r.window_index
        for r in rows
        if r.processing_status == ProcessingStatus.FAILED and r.ingest_attempts >= settings.ingest_max_attempts
    }
    expected = set(known) | {r.window_index for r in rows}
    if not expected or expected - complete - failed:
        return None
    return {"windows": len(expected), "complete": len(complete), "failed": len(failed)}


def _record_if_done(
    services: EventPorts, session: Session, user_id: str, session_id: str, info: SessionInfo | None
) -> bool:
    """In `session`: record `SessionProcessed` when the session ended and is done. `info` is the catalog entry
    as the caller read it; the catalog is read again (the session may have ended since) only once the
    windows are done."""
    settings = services.ingest_settings
    detail = _outcome(session, settings, user_id, session_id, info.windows() if info else ())
    if detail is None:
        return False
    if info is None or not info.ended:
        info = session_info(services, session_id)
        if info is None or not info.ended:
            return False
        detail = _outcome(session, settings, user_id, session_id, info.windows())
    if detail is None or (info.user_id is not None and info.user_id != user_id):
        return False
    return record(session, user_id, session_id, f"session:{session_id}:processed", "SessionProcessed", detail)


def note_session_processed(services: EventPorts, user_id: str, session_id: str) -> bool:
    """Record `SessionProcessed` if the session ended and each of its windows is done; True when recorded now."""
    with services.db.unit_of_work(user_id) as session:
        return _record_if_done(services, session, user_id, session_id, None)


def settle_events(services: EventPorts, user_id: str, session_id: str, info: SessionInfo | None = None) -> None:
    """After a window's run, in one unit of work: `SessionProcessed` if it was the last, then publish the
    user's events (`info`: the session's catalog entry as the run read it).

    Never raises: what is not recorded or published here, `recover_events` does later."""
    try:
        with services.db.unit_of_work(user_id) as session:
            _record_if_done(services, session, user_id, session_id, info)
            try:
                published = publish_in(session, services.event_publisher, user_id)
            except Exception as exc:  # the session's event stays recorded; the publish is retried later
                published = 0
                count("AppEventsNotPublished")
                logger.warning("events_not_published", extra={"session_id": session_id, **_error(exc)})
        count("AppEventsPublished", published)
    except Exception as exc:
        count("AppEventsNotRecorded")
        logger.warning("events_not_recorded", extra={"session_id": session_id, **_error(exc)})


def _error(exc: Exception) -> dict[str, str]:
    return {"error_type": type(exc).__name__, "error": str(exc)[:500]}


def recover_events(services: EventPorts, *, sessions: bool = True) -> dict[str, int]:
    """Publish every user's unpublished events; unless `sessions` is False, first record the `SessionProcessed`
    no run recorded and last prune the events published longer ago than `EVENT_RETENTION_S`."""
    recorded = 0
    if sessions:
        for user_id, session_id in sessions_awaiting_event(services.db, RECOVERY_WINDOW_S, RECOVERY_MAX_SESSIONS):
            recorded += note_session_processed(services, user_id, session_id)
    published = publish_pending(services.db, services.event_publisher)
    pruned = prune_published(services.db, EVENT_RETENTION_S) if sessions else 0
    if recorded or published or pruned:
        count("AppEventsRecovered", published)
        logger.info("events_recovered", extra={"sessions_recorded": recorded, "published": published, "pruned": pruned})
    return {"sessions_recorded": recorded, "published": published, "pruned": pruned}
