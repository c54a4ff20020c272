"""The live summary check's cheap path: a window that cannot close its slot takes no slot lock (issue 16)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from tests.support.memory import add_window, script_memory_models, summaries
from worldmm.ingest.summary_schedule import on_window_complete
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services

pytestmark = pytest.mark.integration

USER = "user-precheck"
SESSION = "sess-precheck"


@pytest.fixture
def llm(scripted_llm: ScriptedLLM) -> ScriptedLLM:
    return script_memory_models(scripted_llm)


@contextmanager
def _statements(services: Services) -> Iterator[list[str]]:
    """Every SQL statement the services' engine sends while the block runs."""
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    event.listen(services.db.engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(services.db.engine, "before_cursor_execute", record)


def test_a_window_that_cannot_close_its_slot_takes_no_slot_lock(services: Services, llm: ScriptedLLM) -> None:
    # GIVEN five of the six windows of the first 3 minutes complete, each signalled as it lands
    with _statements(services) as sent:
        for n in range(5):
            add_window(services, USER, SESSION, n)
            on_window_complete(services, USER, SESSION, n)
    # THEN no signal took the summary slot's lock: one small read each decided nothing was due
    assert not [s for s in sent if "pg_advisory_xact_lock" in s]
    assert summaries(services, USER, SESSION) == []
    # WHEN the sixth lands
    with _statements(services) as sent:
        add_window(services, USER, SESSION, 5)
        on_window_complete(services, USER, SESSION, 5)
    # THEN the locked path runs and produces the summary
    assert [s for s in sent if "pg_advisory_xact_lock" in s]
    [summary] = summaries(services, USER, SESSION)
    assert (summary.duration_seconds, summary.window_index) == (180, 0)
    assert len(llm.calls_for("merge_captions")) == 1
