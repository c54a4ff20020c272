"""App events (issue 65): window outcomes and `SessionProcessed` recorded with the write, published after it
commits, at least once, with ids that make a duplicate detectable, and never carrying memory content."""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import select, text, update

from tests.support.events import RecordingPublisher
from tests.support.ingest import (
    CAPTION,
    SESSION,
    USER,
    failing,
    make_ingest_services,
    put_session,
    put_window,
    script_window_models,
)
from worldmm.db.models import EventOutboxRow, ProcessingStatus, Segment
from worldmm.events.outbox import event_id, publish_pending, record, unpublished
from worldmm.ingest.app_events import recover_events
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.window import ingest_window
from worldmm.services import Services

pytestmark = pytest.mark.integration

CONTENT = ("Kate", "kitchen", "mug", "tea", CAPTION)


@pytest.fixture
def publisher() -> RecordingPublisher:
    return RecordingPublisher()


@pytest.fixture
def svc(settings, db, scripted_llm, tmp_path, publisher) -> Services:
    script_window_models(scripted_llm)
    services = make_ingest_services(settings, db, scripted_llm, tmp_path / "objects")
    return services.replace(event_publisher=publisher)


def end_session(services: Services, session_id: str = SESSION, user_id: str = USER) -> None:
    """The catalog entry as capture's end leaves it."""
    put_session(services.store, session_id, user_id=user_id)
    key = f"sessions/{session_id}/metadata.json"
    doc = json.loads(services.store.get(key))
    services.store.put(key, json.dumps({**doc, "endedAt": "2026-05-01T10:05:00+00:00"}).encode())


def ingest(services: Services, index: int, session_id: str = SESSION, user_id: str = USER) -> None:
    put_window(services.store, session_id, index, frames=2)
    event = IngestWindowEvent(sessionId=session_id, userId=user_id, windowIndex=index, frameCount=2)
    ingest_window(services, event)


def outbox(db, user_id: str = USER) -> list[EventOutboxRow]:
    with db.unit_of_work(user_id) as s:
        rows = list(s.scalars(select(EventOutboxRow).order_by(EventOutboxRow.seq)))
        s.expunge_all()
    return rows


def test_a_completed_window_publishes_one_window_processed_without_content(svc, db, publisher):
    # GIVEN a window of a session not yet ended; WHEN it is ingested
    ingest(svc, 0)
    # THEN one WindowProcessed is recorded and published, with ids and counts only
    [event] = publisher.events
    assert event.type == "WindowProcessed" and event.userId == USER and event.sessionId == SESSION
    assert (event.windowIndex, event.attempt, event.frameCount, event.enriched) == (0, 1, 2, True)
    assert not any(word.lower() in event.model_dump_json().lower() for word in CONTENT)
    [row] = outbox(db)
    assert row.published_at is not None and str(row.id) == event.eventId
    assert uuid.UUID(event.eventId) == event_id(USER, row.subject)


def test_a_failed_window_publishes_window_failed_with_its_error_type_only(svc, db, publisher, scripted_llm):
    # GIVEN the captioning model failing with a message that quotes content
    scripted_llm.script("caption", failing("could not caption Kate's red mug"))
    # WHEN the window is ingested
    with pytest.raises(Exception, match="Kate"):
        ingest(svc, 0)
    # THEN one WindowFailed is published, naming the error's type and not its message
    [event] = publisher.events
    assert event.type == "WindowFailed" and event.attempt == 1 and event.errorType
    assert "Kate" not in event.model_dump_json() and "mug" not in event.model_dump_json()


def test_a_session_of_four_windows_gives_one_event_per_window_and_one_session_processed(svc, db, publisher):
    # GIVEN a session whose four windows landed and which the wearer ended
    for index in range(4):
        put_window(svc.store, SESSION, index, frames=2)
    end_session(svc)
    # WHEN each window is ingested, the last one twice (a redelivered event)
    for index in (0, 1, 2, 3, 3):
        ingest(svc, index)
    # THEN four WindowProcessed and exactly one SessionProcessed, after the last window, with the counts
    assert publisher.types() == ["WindowProcessed"] * 4 + ["SessionProcessed"]
    done = publisher.events[-1]
    assert (done.windows, done.complete, done.failed) == (4, 4, 0)
    assert len({e.eventId for e in publisher.events}) == 5
    assert all(r.published_at is not None for r in outbox(db))


def test_the_session_is_not_processed_while_a_window_is_still_to_come(svc, publisher):
    # GIVEN an ended session with two windows uploaded; WHEN only the first is ingested
    for index in range(2):
        put_window(svc.store, SESSION, index, frames=2)
    end_session(svc)
    ingest(svc, 0)
    # THEN there is no SessionProcessed yet
    assert publisher.types() == ["WindowProcessed"]


def test_an_event_bridge_outage_leaves_events_in_the_outbox_for_the_recovery(svc, db, publisher):
    # GIVEN the publisher failing while an ended session's only window is ingested
    end_session(svc)
    publisher.fail = True
    ingest(svc, 0)
    # THEN the window is complete and both events wait, unpublished
    assert [e.type for e in unpublished(db, USER)] == ["WindowProcessed", "SessionProcessed"]
    assert publisher.events == []
    # WHEN the publisher is back and the recovery (the reaper's, serve's dispatcher) runs
    publisher.fail = False
    report = recover_events(svc)
    # THEN both are published once, and a second recovery publishes nothing again
    assert publisher.types() == ["WindowProcessed", "SessionProcessed"]
    assert report["published"] == 2
    assert recover_events(svc)["published"] == 0


def test_a_killed_publish_republishes_with_the_same_ids(svc, db, publisher):
    # GIVEN events published but not marked (the process died between the two)
    ingest(svc, 0)
    with db.unit_of_work(USER) as s:
        s.execute(update(EventOutboxRow).values(published_at=None))
    # WHEN the dispatcher runs again
    publish_pending(db, publisher)
    # THEN the event is delivered again under the same id: the consumer sees the duplicate
    assert [e.eventId for e in publisher.events] == [publisher.events[0].eventId] * 2


def test_the_recovery_records_session_processed_when_the_last_window_failed_for_good(svc, db, publisher):
    # GIVEN an ended session whose second window failed on its last attempt (no window hook runs after it)
    end_session(svc)
    put_window(svc.store, SESSION, 1, frames=2)
    ingest(svc, 0)
    with db.unit_of_work(USER) as s:
        s.add(
            Segment(
                user_id=USER,
                session_id=SESSION,
                window_index=1,
                duration_seconds=svc.settings.window_seconds,
                start_time=s.scalar(select(Segment.end_time)),
                end_time=s.scalar(select(Segment.end_time)),
                processing_status=ProcessingStatus.FAILED,
                ingest_attempts=svc.settings.ingest_max_attempts,
                error="RuntimeError: gone",
            )
        )
    # WHEN the recovery runs
    recover_events(svc)
    # THEN the failure and the session's end are published, the session counting one failed window
    assert publisher.types() == ["WindowProcessed", "WindowFailed", "SessionProcessed"]
    assert (publisher.events[-1].complete, publisher.events[-1].failed) == (1, 1)


def test_another_user_cannot_read_or_mark_the_owners_events(svc, db):
    # GIVEN Alice's event, unpublished
    failing_svc = svc.replace(event_publisher=RecordingPublisher())
    failing_svc.event_publisher.fail = True  # type: ignore[attr-defined]
    ingest(failing_svc, 0)
    # THEN Bob's unit of work sees none of them, and cannot mark them
    with db.unit_of_work("user-bob") as s:
        assert s.execute(text("SELECT count(*) FROM worldmm_event_outbox")).scalar() == 0
        s.execute(update(EventOutboxRow).values(published_at=None))
    assert [e.type for e in unpublished(db, USER)] == ["WindowProcessed"]


def test_the_recovery_prunes_events_published_longer_ago_than_the_retention(svc, db, publisher):
    # GIVEN two users' windows ingested and published, and one event of the first left unpublished
    ingest(svc, 0)
    with db.unit_of_work("other-user") as s:
        detail = {"windows": 1, "complete": 1, "failed": 0}
        record(s, "other-user", "s-other", "session:s-other:processed", "SessionProcessed", detail)
    publish_pending(db, publisher)
    ingest(svc, 1)
    kept = outbox(db)[-1].id
    with db.unit_of_work(USER) as s:
        s.execute(update(EventOutboxRow).where(EventOutboxRow.id == kept).values(published_at=None))
    # WHEN all were written 15 days ago (past the 14-day retention) and the recovery's full round runs
    for user in (USER, "other-user"):
        with db.unit_of_work(user) as s:
            s.execute(
                update(EventOutboxRow).values(
                    created_at=text("created_at - interval '15 days'"),
                    published_at=text("published_at - interval '15 days'"),
                )
            )
    report = recover_events(svc)
    # THEN every user's old published event is gone; the unpublished one was published now, not pruned
    assert report["pruned"] == 2
    assert [r.id for r in outbox(db)] == [kept]
    with db.unit_of_work("other-user") as s:
        assert s.scalars(select(EventOutboxRow)).all() == []


def test_the_database_keeps_published_events_eight_days_whatever_the_caller_asks(svc, db):
    # GIVEN a window's event published seven days ago (within the recovery sweep's window)
    ingest(svc, 0)
    with db.unit_of_work(USER) as s:
        s.execute(update(EventOutboxRow).values(published_at=text("now() - interval '7 days'")))
    # WHEN a caller asks to prune everything published over a second ago
    with db.unit_of_work(None) as s:
        pruned = s.execute(text("SELECT worldmm_prune_published_events(1, 100)")).scalar()
    # THEN nothing goes
    assert pruned == 0
    assert len(outbox(db)) == 1
