"""Recovery after a crash: a local claim whose process was SIGKILLed is taken over at once (the aws
profile keeps the lease), and `worldmm reap` says what it recovered, what failed and why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.support.harness import make_settings
from tests.support.ingest import (
    CREATED_AT,
    SESSION,
    USER,
    counts,
    failing,
    make_ingest_services,
    put_window,
    script_window_models,
    window_segment,
)
from worldmm.config import Profile, Settings
from worldmm.db.engine import Database
from worldmm.db.models import ProcessingStatus
from worldmm.ingest.enrichment import ClaimStatus, claim_segment
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.ingest.reaper import reap
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, local_handlers, set_services

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

# A child that ingests window 0 and hangs in the caption call, holding the window's claim.
_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tests.support.harness import make_settings
    from tests.support.ingest import make_ingest_services, script_window_models
    from worldmm.db.engine import Database
    from worldmm.llm.scripted import ScriptedLLM
    from worldmm.ingest.events import IngestWindowEvent
    from worldmm.ingest.window import ingest_window

    url, root = sys.argv[1], Path(sys.argv[2])
    llm = script_window_models(ScriptedLLM()).script("caption", lambda request: time.sleep(600))
    services = make_ingest_services(make_settings(database_url=url), Database(url), llm, root)
    ingest_window(services, IngestWindowEvent(sessionId="sess-1", userId="user-a", windowIndex=0, frameCount=20))
    """
)


def _services(settings: Settings, db: Database, root: Path, llm: ScriptedLLM | None = None) -> Services:
    svc = make_ingest_services(settings, db, llm or script_window_models(ScriptedLLM()), root)
    svc.invoker = InProcessInvoker(local_handlers(svc))  # type: ignore[misc]
    return svc


def _claimed_by_child(db: Database, root: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, db.url, str(root)], env=env, text=True, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        row = window_segment(db)
        if row is not None and row.claim_owner is not None:
            assert row.claim_owner.split("|")[2] == str(child.pid)
            return child
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        time.sleep(0.1)
    child.kill()
    raise AssertionError("the child never claimed the window")


def test_a_claim_whose_process_was_killed_is_taken_over_at_once_by_reap(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    # GIVEN window 0, claimed by a child process that hangs in its caption call
    svc = _services(settings, db, tmp_path)
    put_window(svc.store)
    child = _claimed_by_child(db, tmp_path)
    try:
        # WHILE it runs, its claim is respected: reap finds nothing and a second claim is BUSY
        assert reap(svc, older_than_s=3600).windows == []
        row = window_segment(db)
        assert row is not None
        busy = claim_segment(
            svc, user_id=USER, session_id=SESSION, window_index=0, duration_seconds=30,
            start_time=row.start_time, end_time=row.end_time,
        )
        assert busy.status == ClaimStatus.BUSY
    finally:
        # WHEN the child is SIGKILLed (nothing of it runs any more)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    # THEN reap (threshold an hour, lease 900 s: neither has passed) takes the window over now
    report = reap(svc, older_than_s=3600)
    assert [(w["window_index"], w["outcome"], w["error"]) for w in report.windows] == [(0, "recovered", None)]
    row = window_segment(db)
    assert row is not None and row.processing_status == ProcessingStatus.COMPLETE and row.claim_owner is None
    assert counts(db) == {"segments": 1, "entities": 3, "triples": 3, "visual": 1}


def test_the_aws_profile_keeps_the_lease_and_records_no_owner(settings: Settings, db: Database, tmp_path: Path) -> None:
    # GIVEN a window claimed on the aws profile (the owner would be a Lambda container: never recorded)
    aws = make_settings(
        database_url=settings.database_url, worldmm_profile=Profile.AWS, cursor_secret=settings.cursor_secret
    )
    svc = _services(aws, db, tmp_path)
    put_window(svc.store)
    claim_args = {"user_id": USER, "session_id": SESSION, "window_index": 0, "duration_seconds": 30}
    start = window_start(0)
    first = claim_segment(svc, **claim_args, start_time=start, end_time=start)  # type: ignore[arg-type]
    assert first.status == ClaimStatus.CLAIMED
    row = window_segment(db)
    assert row is not None and row.claim_owner is None
    # THEN a second claim inside the lease is BUSY, even though no process of this machine holds it
    again = claim_segment(svc, **claim_args, start_time=start, end_time=start)  # type: ignore[arg-type]
    assert again.status == ClaimStatus.BUSY


def test_reap_cli_reports_recovered_and_failed_windows_and_exits_non_zero(
    settings: Settings, db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlalchemy import text

    from worldmm.cli import main

    # GIVEN two windows left pending an hour ago (window 1 the older, so re-run first); the first NER call
    # of the re-runs fails
    llm = script_window_models(ScriptedLLM())
    llm.queue("ner", [failing("NER endpoint down")])
    svc = _services(settings, db, tmp_path, llm)
    for index in (0, 1):
        put_window(svc.store, index=index)
        claim_segment(
            svc, user_id=USER, session_id=SESSION, window_index=index, duration_seconds=30,
            start_time=window_start(index), end_time=window_start(index),
        )
    with db.unit_of_work(USER) as session:
        session.execute(text(
            "UPDATE worldmm_segments SET claim_token = NULL, claim_owner = NULL,"
            " updated_at = now() - interval '1 hour' - window_index * interval '1 minute'"
        ))
    set_services(svc)
    try:
        # WHEN the operator runs reap
        status = main(["reap", "--older-than", "600"])
    finally:
        set_services(None)
    out, err = capsys.readouterr()
    report = json.loads(out)
    # THEN it exits 1 and says window 1 failed and why, and window 0 was recovered
    assert status == 1
    assert (report["recovered"], report["failed"]) == (1, 1)
    outcomes = {w["window_index"]: (w["outcome"], w["error"]) for w in report["windows"]}
    assert outcomes[0] == ("recovered", None)
    assert outcomes[1][0] == "failed" and "NER endpoint down" in outcomes[1][1]
    assert "window 1: RuntimeError: NER endpoint down" in err


def window_start(index: int) -> datetime:
    return datetime.fromisoformat(CREATED_AT) + timedelta(seconds=30 * index)
