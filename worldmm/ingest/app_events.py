"""The ingest side of the app events (issue 65): `SessionProcessed` when a session is done, and publishing.

Window outcomes are recorded by the database with the status change itself (migration 0019's trigger). A
session is done when it has ended and every one of its windows is complete or failed with no attempt left;
whoever finds that records `SessionProcessed` once (its id is the session's). After each window the ingest
function publishes its user's unpublished events; what a crash or an EventBridge outage leaves unpublished
(and a session whose last window failed for good, which runs no hook) is picked up by `recover_events`,
which the reaper runs and `worldmm serve` runs in the background.
"""

from __future__ import annotations

from typing import Protocol

from aws_lambda_powertools import Logger
from sqlalchemy import select

from worldmm.db.models import ProcessingStatus, Segment
from worldmm.db.port import DatabasePorts
from worldmm.events.outbox import publish_pending, record, sessions_awaiting_event
from worldmm.events.port import EventPublisher
from worldmm.ingest.sessions.port import SessionPorts, session_info
from worldmm.observability import count

logger = Logger(child=True)

RECOVERY_WINDOW_S = 7 * 86_400
"""How far back the recovery sweep looks for sessions whose `SessionProcessed` is missing."""
RECOVERY_MAX_SESSIONS = 500


class EventPorts(DatabasePorts, SessionPorts, Protocol):
    """Recording and publishing app events: the database, the session catalog and the publisher."""

    @property
    def event_publisher(self) -> EventPublisher: ...


def note_session_processed(services: EventPorts, user_id: str, session_id: str) -> bool:
    """Record `SessionProcessed` if the session ended and each of its windows is done; True when recorded now."""
    info = session_info(services, session_id)
    if info is None or not info.ended or (info.user_id is not None and info.user_id != user_id):
        return False
    settings = services.settings
    with services.db.unit_of_work(user_id) as session:
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
        expected = set(info.windows()) | {r.window_index for r in rows}
        if not expected or expected - complete - failed:
            return False
        detail = {"windows": len(expected), "complete": len(complete), "failed": len(failed)}
        return record(session, user_id, session_id, f"session:{session_id}:processed", "SessionProcessed", detail)


def settle_events(services: EventPorts, user_id: str, session_id: str) -> None:
    """After a window's run: `SessionProcessed` if it was the last, then publish the user's events.

    Never raises: what is not recorded or published here, `recover_events` does later."""
    try:
        note_session_processed(services, user_id, session_id)
        count("AppEventsPublished", publish_pending(services.db, services.event_publisher, user_id))
    except Exception as exc:
        count("AppEventsNotPublished")
        failure = {"session_id": session_id, "error_type": type(exc).__name__, "error": str(exc)}
        logger.warning("events_not_published", extra=failure)


def recover_events(services: EventPorts, *, sessions: bool = True) -> dict[str, int]:
    """Record the `SessionProcessed` no run recorded (unless `sessions` is False), then publish every user's
    unpublished events."""
    recorded = 0
    if sessions:
        for user_id, session_id in sessions_awaiting_event(services.db, RECOVERY_WINDOW_S, RECOVERY_MAX_SESSIONS):
            recorded += note_session_processed(services, user_id, session_id)
    published = publish_pending(services.db, services.event_publisher)
    if recorded or published:
        count("AppEventsRecovered", published)
        logger.info("events_recovered", extra={"sessions_recorded": recorded, "published": published})
    return {"sessions_recorded": recorded, "published": published}
