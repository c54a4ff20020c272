"""The orphan reaper: stale pending/failed windows of every user are re-invoked; nothing else is."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update

from worldmm.db.models import ProcessingStatus, Segment
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.ingest.reaper import reap_orphans
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


def add(db, user: str, index: int, status: ProcessingStatus, age: timedelta, duration: int = 30) -> None:
    with db.unit_of_work(user) as session:
        seg = Segment(
            id=uuid.uuid4(),
            user_id=user,
            session_id="s1",
            window_index=index,
            duration_seconds=duration,
            start_time=T0,
            end_time=T0,
            processing_status=status,
            frame_count=16,
        )
        session.add(seg)
        session.flush()
        session.execute(
            update(Segment).where(Segment.id == seg.id).values(updated_at=datetime.now(UTC) - age)
        )


@pytest.fixture
def svc(settings, db):
    return Services(settings, db=db, invoker=InProcessInvoker())


def test_reaper_reinvokes_stale_non_complete_windows_of_every_user(svc, db):
    # GIVEN stale pending/failed windows of two users, a stale complete one, a fresh one, a stale summary
    add(db, "user-a", 0, ProcessingStatus.PENDING, timedelta(hours=2))
    add(db, "user-b", 3, ProcessingStatus.FAILED, timedelta(hours=3))
    add(db, "user-a", 1, ProcessingStatus.COMPLETE, timedelta(hours=2))
    add(db, "user-a", 2, ProcessingStatus.PENDING, timedelta(minutes=1))
    add(db, "user-a", 0, ProcessingStatus.PENDING, timedelta(hours=2), duration=180)
    # WHEN the reaper runs with a one-hour threshold
    reaped = reap_orphans(svc, older_than_s=3600)
    # THEN the two stale 30 s windows are re-invoked, oldest first, then for the stale summary its last
    # complete window (whose re-check resumes the summary); the fresh window is left alone
    assert [(w["user_id"], w["window_index"]) for w in reaped] == [("user-b", 3), ("user-a", 0), ("user-a", 1)]
    assert svc.invoker.invocations == [
        ("IngestWindowFunction", {"sessionId": "s1", "userId": "user-b", "windowIndex": 3, "frameCount": 16}),
        ("IngestWindowFunction", {"sessionId": "s1", "userId": "user-a", "windowIndex": 0, "frameCount": 16}),
        ("IngestWindowFunction", {"sessionId": "s1", "userId": "user-a", "windowIndex": 1, "frameCount": 16}),
    ]


def test_reaper_uses_the_configured_age_by_default(svc, db):
    add(db, "user-a", 0, ProcessingStatus.PENDING, timedelta(minutes=20))  # default threshold 30 min
    assert reap_orphans(svc) == []


def test_reaper_cli_prints_each_window_and_what_became_of_it(svc, db, capsys):
    from worldmm.cli import main

    # GIVEN a stale window and an invoker with no ingest function behind it (so nothing runs it)
    add(db, "user-a", 4, ProcessingStatus.PENDING, timedelta(hours=1))
    set_services(svc)
    try:
        # THEN reap exits 1: the window it invoked is still pending afterwards
        assert main(["reap", "--older-than", "600"]) == 1
    finally:
        set_services(None)
    out = json.loads(capsys.readouterr().out)
    assert out["windows"] == [
        {
            "user_id": "user-a",
            "session_id": "s1",
            "window_index": 4,
            "frame_count": 16,
            "outcome": "failed",
            "error": "left pending (GPU unavailable or no frames)",
            "invoked": True,
        }
    ]
    assert (out["failed"], out["recovered"]) == (1, 0)
