"""A window that keeps failing stops being re-run (each run is paid model work).

Every claim of a window counts (`ingest_attempts`, migration 0012); after INGEST_MAX_ATTEMPTS the window is
left failed ("attempts exhausted") and a further invocation (the reaper's, the DLQ's, a duplicate event) asks
no model; a forced retrigger (an operator, or a late upload within CAPTURE_MAX_WINDOW_RERUNS) starts it over.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.ingest import (
    SESSION,
    USER,
    failing,
    make_ingest_services,
    put_window,
    script_window_models,
    window_segment,
)
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.models import ProcessingStatus
from worldmm.ingest.events import IngestWindowEvent, RetriggerEvent
from worldmm.ingest.retrigger import retrigger
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM

pytestmark = pytest.mark.integration

EVENT = IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=0, frameCount=4)


def test_security_a_failing_window_is_run_at_most_max_attempts_times(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    llm = script_window_models(ScriptedLLM()).script("caption", failing("model endpoint down"))
    services = make_ingest_services(
        settings.model_copy(update={"ingest_max_attempts": 3}), db, llm, tmp_path / "objects"
    )
    put_window(services.store, frames=4)
    outcomes = []
    for _ in range(5):
        try:
            outcomes.append(ingest_window(services, EVENT).status)
        except Exception as exc:  # a failed run raises (the event goes to the DLQ)
            outcomes.append(type(exc).__name__)
    caption_calls = len(llm.calls_for("caption"))
    assert outcomes[3:] == ["skipped", "skipped"] and "skipped" not in outcomes[:3], outcomes
    segment = window_segment(db)
    assert segment is not None and segment.processing_status == ProcessingStatus.FAILED
    assert segment.ingest_attempts == 3 and segment.error == "RuntimeError: model endpoint down"  # the last cause
    assert ingest_window(services, EVENT).status == "skipped"
    assert len(llm.calls_for("caption")) == caption_calls  # no model was asked after the third claim
    # A forced retrigger starts the count over: the window runs again (and now succeeds)
    llm.script("caption", {"caption": "Kate holds a mug in the kitchen."})
    services.invoker.handlers.clear()  # type: ignore[attr-defined]
    retrigger(services, RetriggerEvent(sessionId=SESSION, userId=USER, windowIndices=[0], force=True))
    assert ingest_window(services, EVENT).status == "ok"
    segment = window_segment(db)
    assert segment is not None and segment.processing_status == ProcessingStatus.COMPLETE
