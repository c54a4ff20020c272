"""Written summaries in the live schedule (issue 62, item 1): the memory says whether a summary was written by the
model or is the extractive one its failed check fell back to, and producing it again asks no model."""

from __future__ import annotations

import pytest

from tests.support.memory import add_window, script_memory_models, summaries
from worldmm.db.models import ProcessingStatus
from worldmm.ingest.summary_schedule import on_session_end, on_window_complete
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.episodic.summarizer import ExtractiveSummarizer
from worldmm.memory.episodic.written import WRITTEN_PURPOSE, WrittenSummarizer
from worldmm.services import Services

pytestmark = pytest.mark.integration

USER = "user-written"
SESSION = "sess-written"


def _services(services: Services, answer: str) -> tuple[Services, ScriptedLLM]:
    reader = ScriptedLLM({WRITTEN_PURPOSE: {"summary": answer}})
    settings = services.settings.model_copy(update={"extraction_provider": "spacy"})
    written = WrittenSummarizer(reader, settings, ExtractiveSummarizer(settings))
    return Services(settings, db=services.db, llm=services.llm, embedder=services.embedder, summarizer=written), reader


def _three_minutes(services: Services) -> None:
    for n in range(6):
        add_window(services, USER, SESSION, n, f"I am in window {n} with Alice at the Corner Cafe.")
        on_window_complete(services, USER, SESSION, n)


@pytest.mark.parametrize(
    ("answer", "source"),
    [
        ("You were with Alice at the Corner Cafe.", "written"),
        ("You were with Bob at the Corner Cafe.", "extractive"),  # Bob was never there
    ],
)
def test_a_summary_records_whether_it_was_written_or_fell_back(
    services: Services, scripted_llm: ScriptedLLM, answer: str, source: str
) -> None:
    script_memory_models(scripted_llm)
    written, reader = _services(services, answer)
    # WHEN the six windows of a 3 minute span complete
    _three_minutes(written)
    # THEN its summary is the model's when every detail is the span's, else the extractive one, and says which
    [summary] = summaries(written, USER, SESSION)
    assert summary.processing_status == ProcessingStatus.COMPLETE
    assert (summary.caption_source, summary.caption == answer) == (source, source == "written")
    assert len(reader.calls_for(WRITTEN_PURPOSE)) == 1
    # AND closing the session again changes nothing and asks the model nothing more
    on_session_end(written, USER, SESSION)
    assert [s.caption for s in summaries(written, USER, SESSION)] == [summary.caption]
    assert len(reader.calls_for(WRITTEN_PURPOSE)) == 1
