"""Summaries resume after a function dies mid-cascade: re-invoked windows re-check their parents, a
complete summary still closes its parent, failures are counted, and the reaper covers summaries."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import delete, update

from tests.support.ingest import make_ingest_services, put_session
from tests.support.memory import add_window, script_memory_models, summaries
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.models import ProcessingStatus, Segment
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.reaper import reap_orphans
from worldmm.ingest.summary_schedule import on_window_complete
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services

pytestmark = pytest.mark.integration

USER = "user-resume"
SESSION = "sess-resume"


@pytest.fixture
def svc(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Services:
    services = make_ingest_services(settings, db, script_memory_models(scripted_llm), tmp_path)
    put_session(services.store, SESSION, user_id=USER)
    return services


def _scales(services: Services) -> list[tuple[int, int, ProcessingStatus]]:
    return [(s.duration_seconds, s.window_index, s.processing_status) for s in summaries(services, USER, SESSION)]


def _age(services: Services, duration: int, hours: float) -> None:
    with services.db.unit_of_work(USER) as session:
        session.execute(
            update(Segment)
            .where(Segment.duration_seconds == duration)
            .values(updated_at=datetime.now(UTC) - timedelta(hours=hours))
        )


def test_an_already_complete_window_reinvoked_produces_the_summary_its_first_run_never_closed(
    svc: Services,
) -> None:
    # GIVEN six complete windows whose invocations died before the multiscale hook ran
    for n in range(6):
        add_window(svc, USER, SESSION, n)
    assert _scales(svc) == []
    # WHEN the last window is invoked again (DLQ retry, reaper, retrigger)
    result = ingest_window(svc, IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=5, frameCount=0))
    # THEN it reports the window as already processed and the 3 min summary now exists
    assert result.status == "already_processed"
    assert _scales(svc) == [(180, 0, ProcessingStatus.COMPLETE)]


def test_a_complete_summary_closes_its_parent_when_rechecked(svc: Services) -> None:
    # GIVEN a full 10 min block whose 10 min summary was never produced (killed after the last 3 min one)
    for n in range(20):
        add_window(svc, USER, SESSION, n)
    for n in (5, 11, 17):
        on_window_complete(svc, USER, SESSION, n)
    with svc.db.unit_of_work(USER) as session:
        session.execute(delete(Segment).where(Segment.duration_seconds == 600))
    assert (600, 0, ProcessingStatus.COMPLETE) not in _scales(svc)
    # WHEN any window of the block is re-checked
    on_window_complete(svc, USER, SESSION, 0)
    # THEN the walk goes up through the complete 3 min summary and produces the 10 min one
    assert (600, 0, ProcessingStatus.COMPLETE) in _scales(svc)


def test_a_summary_failure_is_counted_and_logged_not_raised(
    svc: Services, scripted_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worldmm import observability
    from worldmm.observability import metrics

    monkeypatch.setattr(observability, "recording", lambda: True)  # as on the aws profile
    # GIVEN a merge that fails outright
    scripted_llm.script("merge_captions", RuntimeError("model down"))
    for n in range(6):
        add_window(svc, USER, SESSION, n)
    metrics.clear_metrics()
    # WHEN the window's hook runs
    ingest_window(svc, IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=5, frameCount=0))
    # THEN the window stands, the summary is marked failed, and SummaryFailed is counted
    assert _scales(svc) == [(180, 0, ProcessingStatus.FAILED)]
    assert metrics.metric_set["SummaryFailed"]["Value"] == [1.0]
    metrics.clear_metrics()


def test_the_reaper_reinvokes_the_last_complete_window_under_a_stale_failed_summary(svc: Services) -> None:
    # GIVEN a 3 min summary left failed two hours ago over six complete windows
    for n in range(6):
        add_window(svc, USER, SESSION, n)
    with svc.db.unit_of_work(USER) as session:
        start = datetime(2026, 1, 1, tzinfo=UTC)
        session.add(
            Segment(
                id=uuid.uuid4(),
                user_id=USER,
                session_id=SESSION,
                window_index=0,
                duration_seconds=180,
                start_time=start,
                end_time=start,
                processing_status=ProcessingStatus.FAILED,
            )
        )
    _age(svc, 180, hours=2)
    # WHEN the reaper runs
    reaped = reap_orphans(svc, older_than_s=3600)
    # THEN it re-invokes ingest for window 5, whose re-check produces the summary
    assert [(w["session_id"], w["window_index"]) for w in reaped] == [(SESSION, 5)]
    [(function, payload)] = svc.invoker.invocations  # type: ignore[attr-defined]
    assert function == "IngestWindowFunction"
    ingest_window(svc, IngestWindowEvent.model_validate(payload))
    assert _scales(svc) == [(180, 0, ProcessingStatus.COMPLETE)]


def test_a_summary_whose_local_producer_was_killed_is_resumed_by_reap_at_once(svc: Services) -> None:
    import subprocess
    import sys

    from worldmm.ingest.claim_owner import ClaimOwner, current_owner
    from worldmm.ingest.invoker.local import InProcessInvoker
    from worldmm.ingest.reaper import reap
    from worldmm.services import local_handlers

    # GIVEN six complete windows and their 3 min summary left pending just now by a process that is gone
    child = subprocess.run(
        [sys.executable, "-c", "from worldmm.ingest.claim_owner import current_owner; print(current_owner())"],
        capture_output=True, text=True, check=True,
    )
    dead = ClaimOwner.parse(child.stdout.strip())
    assert dead is not None and dead.host == current_owner().host
    for n in range(6):
        add_window(svc, USER, SESSION, n)
    with svc.db.unit_of_work(USER) as session:
        start = datetime(2026, 1, 1, tzinfo=UTC)
        session.add(
            Segment(
                id=uuid.uuid4(), user_id=USER, session_id=SESSION, window_index=0, duration_seconds=180,
                start_time=start, end_time=start, processing_status=ProcessingStatus.PENDING,
                claim_owner=str(dead),
            )
        )
    svc.invoker = InProcessInvoker(local_handlers(svc))  # type: ignore[misc]
    # WHEN the operator runs reap with its default age (30 min: the summary is seconds old)
    report = reap(svc)
    # THEN the summary's last window is re-run, which takes the dead producer's summary over and completes it
    assert [(w["window_index"], w["outcome"]) for w in report.windows] == [(5, "recovered")]
    assert _scales(svc) == [(180, 0, ProcessingStatus.COMPLETE)]
