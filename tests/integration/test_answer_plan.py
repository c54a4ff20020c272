"""The fixed plan on the sample session's memory (real PostgreSQL, spaCy, extractive summaries, no model call).

The sample morning is ingested once, as text (each scene's lines are its window's transcript), exactly as
`worldmm eval sample` builds it; questions are then asked through the chat-verbose handler and the agent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any, cast

import pytest

from tests.support.harness import make_settings, truncate_all
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase
from worldmm.demo import load_questions
from worldmm.eval.datasets import load_sample_session
from worldmm.ingest.text_windows import ingest_text_windows
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.retrieval.agent import answer_question
from worldmm.retrieval.compose import NO_MEMORY
from worldmm.retrieval.hybrid import hybrid_search, windows_within
from worldmm.retrieval.reader import READ_PURPOSE
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

USER = "user-sample"
BENCHMARK = load_sample_session()
WINDOWS = {w.window_id: w for w in BENCHMARK.windows}
ASKED_AT = BENCHMARK.questions[0].asked_at  # a minute after the morning's last window


def _plan_settings(pg: LocalDatabase, **overrides: Any) -> Settings:
    """The fixed plan on the test database, with spaCy extraction and extractive summaries."""
    return make_settings(
        database_url=pg.app_url,
        database_admin_url=pg.admin_url,
        extraction_provider="spacy",
        summary_provider="extractive",
        agent_mode="plan",
        episodic_rerank=False,  # as beside the small local LLM: no model call on the question path
        **overrides,
    )


@pytest.fixture(scope="module")
def sample(pg: LocalDatabase) -> Iterator[Services]:
    """The sample morning's memory, built once for the module; no model may be called (none is scripted)."""
    truncate_all(pg.admin_url)
    settings = _plan_settings(pg)
    db = Database(pg.app_url)
    services = Services(settings, db=db, llm=ScriptedLLM(), embedder=HashEmbedder(settings.embedding_dim))
    ingest_text_windows(services, USER, BENCHMARK.text_windows())
    set_services(services)
    yield services
    set_services(None)
    truncate_all(pg.admin_url)


def _overlaps(citation: Any, window_id: str) -> bool:
    window = WINDOWS[window_id]
    return bool(citation.start_time < window.end_time and window.start_time < citation.end_time)


@pytest.mark.xfail(
    strict=True,
    reason="provisional weights: 'the spare key on the hallway shelf' shares as many of the question's words as "
    "'my keys in the drawer', and its window, retrieved first, decides",
)
def test_plan_answers_where_the_keys_are_with_the_time_and_the_office_window(sample: Services) -> None:
    # WHEN the wearer asks after the morning where the keys are
    result = answer_question(sample, USER, "Where are my keys?", now=ASKED_AT)
    # THEN the answer names the desk drawer and when it was said, and cites a memory of the office windows
    assert "drawer" in result.answer.lower(), result.answer
    [citation] = result.trace.citations
    assert any(_overlaps(citation, w) for w in ("office-arrive", "office-reminders")), (citation, result.answer)
    said = citation.start_time
    assert f"this morning at {said.hour}:{said.minute:02d}" in result.answer.lower(), result.answer
    assert citation.segment_id and citation.duration_seconds in (30, 180, 600, 3600)
    assert sample.llm is not None and cast(ScriptedLLM, sample.llm).calls == []


def test_plan_does_not_remember_what_was_never_recorded(sample: Services) -> None:
    result = answer_question(sample, USER, "Where did I park my bicycle?", now=ASKED_AT)
    assert result.answer == NO_MEMORY
    assert result.trace.citations == []


def test_plan_answers_only_from_memories_before_the_question(sample: Services) -> None:
    # GIVEN a question asked before the morning began: nothing of it is memory yet
    before = WINDOWS["office-arrive"].start_time - timedelta(hours=2)
    result = answer_question(sample, USER, "Where are my keys?", now=before)
    assert result.answer == NO_MEMORY
    assert result.trace.citations == []


def test_chat_verbose_trace_lists_the_citations(sample: Services) -> None:
    # WHEN the question goes through the chat-verbose handler, as API Gateway calls it
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from handlers.http.memories.chat.app import lambda_handler
    from worldmm.gateway.events import LocalLambdaContext, build_event

    event = build_event(
        "POST",
        "/memories/chat/verbose",
        {"content-type": "application/json"},
        json.dumps({"question": "Where are my keys?"}).encode(),
        {"sub": USER},
    )
    response = lambda_handler(event, cast(LambdaContext, LocalLambdaContext("ChatVerboseFunction")))
    body = json.loads(response["body"])
    # THEN the trace lists each cited segment with its times and scale
    assert response["statusCode"] == 200, body
    [citation] = body["trace"]["citations"]
    assert set(citation) >= {"id", "segment_id", "memory_type", "start_time", "end_time", "duration_seconds"}
    assert citation["memory_type"] == "episodic"
    assert body["trace"]["mode"] == "plan"


def test_time_words_about_an_old_recording_are_read_in_its_own_days(sample: Services) -> None:
    # GIVEN the morning (Tuesday 11 March 2025) asked about a month later, as the demo asks its sample
    later = ASKED_AT + timedelta(days=30)
    newest = max(w.end_time for w in BENCHMARK.windows)
    # WHEN the question names "Tuesday morning"
    result = answer_question(sample, USER, "What was I doing in the kitchen on Tuesday morning?", now=later)
    # THEN "Tuesday" is that recording's Tuesday: read at its newest memory's end, and the search was of that day
    assert result.trace.read_at == newest
    episodic = next(r for r in result.trace.rounds if r.memory_type == "episodic")
    assert episodic.note and "2025-03-11 00:00" in episodic.note, episodic.note
    assert "breakfast" in result.answer.lower(), result.answer
    # AND the answer's own words are relative to when it was asked ("on Tuesday 11 March"), not "this morning"
    assert "this morning" not in result.answer.lower() and "11 March" in result.answer
    # AND a question asked within the week is read at its own time
    assert answer_question(sample, USER, "Where are my keys?", now=ASKED_AT).trace.read_at is None


SCRIPT_TEXT_RIGHT_FLOOR = 12
"""Of the 20 committed sample questions, answered right from the script's own text (no speech recognition,
hash vectors: retrieval here is lexical, the fitted weights' closeness in meaning is lost), as measured with the
weights fitted on 2026-12-06 (the phrase rules answered 18); the demo's e2e test asks them of the recording."""


def test_plan_answers_the_committed_sample_questions_from_the_script_text(sample: Services) -> None:
    # GIVEN the questions committed beside the sample recording, with the fact each answer must state
    questions = load_questions()
    assert len(questions) >= 15
    # WHEN each is asked a minute after the morning, of the memory built from the script's lines
    answers = {q.id: answer_question(sample, USER, q.question, now=ASKED_AT) for q in questions}
    # THEN at least the measured number state their fact, and every answer but a refusal cites
    wrong = {q.id: answers[q.id].answer for q in questions if not q.is_right(answers[q.id].answer)}
    assert len(questions) - len(wrong) >= SCRIPT_TEXT_RIGHT_FLOOR, wrong
    for q in questions:  # an answer cites what it quotes; "I don't remember that." cites nothing
        assert bool(answers[q.id].trace.citations) != (answers[q.id].answer == NO_MEMORY), (q.id, answers[q.id].answer)


CAPTIONED = "user-sample-captioned"


@pytest.fixture(scope="module")
def captioned(sample: Services) -> Services:
    """The sample morning again, for another user, each window captioned with what was heard (as the local
    profile captions an audio-only window): windows with captions are merged into 3- and 10-minute summaries."""
    windows = [replace(w, caption=f"I heard: {w.transcript}") for w in BENCHMARK.text_windows()]
    report = ingest_text_windows(sample, CAPTIONED, windows)
    assert report.summaries >= 5, report
    return sample


def test_every_sentence_of_a_summary_is_found_in_a_window_it_spans(captioned: Services) -> None:
    # GIVEN the 3- and 10-minute summaries the search finds for the committed questions
    summaries = {
        m.id: m
        for q in load_questions()
        for m in hybrid_search(captioned, CAPTIONED, q.question, now=ASKED_AT, durations=[180, 600], limit=10).items
    }
    assert len(summaries) >= 3
    for summary in summaries.values():
        assert summary.start_time is not None and summary.end_time is not None
        # WHEN the windows it spans are read
        windows = windows_within(captioned, CAPTIONED, summary)
        # THEN they are its 30-second windows, oldest first
        assert windows and all(w.duration_seconds == 30 for w in windows)
        assert all(summary.start_time <= w.start_time < w.end_time <= summary.end_time for w in windows)
        assert [w.start_time for w in windows] == sorted(w.start_time for w in windows)
        # AND every sentence of the summary was said in one of them: an answer quoting it can cite that window
        said = [_plain(w.text) for w in windows]
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", summary.text):
            if _plain(sentence).strip():
                assert any(_plain(sentence) in text for text in said), (sentence, summary.text)


def test_an_answer_quoting_a_summary_cites_the_window_that_said_it(captioned: Services) -> None:
    # GIVEN a memory whose summaries hold the same sentences as its windows
    questions = [q for q in load_questions() if not q.refusal]
    # WHEN the committed questions are asked
    answers = [answer_question(captioned, CAPTIONED, q.question, now=ASKED_AT) for q in questions]
    # THEN each quoted sentence is cited as the 30-second window that said it, at that window's minute
    by_start = {w.start_time: w for w in BENCHMARK.windows}
    for question, answer in zip(questions, answers, strict=True):
        quotes = answer.answer.split('"')[1::2]  # one a citation, in order
        assert len(quotes) == len(answer.trace.citations), answer.answer
        for citation, quote in zip(answer.trace.citations, quotes, strict=True):
            assert citation.duration_seconds == 30, (question.question, citation, answer.answer)
            said = citation.start_time
            assert f"at {said.hour}:{said.minute:02d}" in answer.answer, answer.answer
            window = by_start[said]
            sentences = re.split(r"(?<=[.!?])\s+", quote)
            assert any(_plain(s) in _plain(window.transcript) for s in sentences), (quote, window.transcript)


def _plain(value: str) -> str:
    return " " + " ".join(re.findall(r"\w+", value.lower())) + " "


@pytest.mark.parametrize(("budget_s", "read"), [(60.0, True), (1e-9, False)])
def test_the_reader_writes_only_while_the_answer_is_within_its_budget(
    pg: LocalDatabase, sample: Services, budget_s: float, read: bool
) -> None:
    # GIVEN the local reader beside the small local LLM, and an answer budget of a minute or of nothing
    settings = _plan_settings(pg, worldmm_profile="local", llm_provider="local", answer_budget_s=budget_s)
    reader = ScriptedLLM().script(READ_PURPOSE, "On the hallway shelf.")
    services = Services(settings, db=sample.db, llm=ScriptedLLM(), reader_llm=reader, embedder=sample.embedder)
    assert settings.reader_enabled
    # WHEN the wearer asks where the spare key was left
    result = answer_question(services, USER, "Where did I leave the spare key?", now=ASKED_AT)
    # THEN the reader writes within the budget; past it, its model is not called and the sentence is quoted
    assert bool(reader.calls_for(READ_PURPOSE)) is read
    assert result.answer.startswith("On the hallway shelf.") is read, result.answer
    assert "hallway shelf" in result.answer.lower(), result.answer
    # AND the trace says which of the two it was
    note = result.trace.answer_note or ""
    assert ("written by the local reader" in note) is read, note
    assert ("past the answer's 1e-09 s deadline, the reader's model skipped writing" in note) is not read, note


def test_a_question_that_waited_past_its_deadline_is_given_the_composers_answer(
    pg: LocalDatabase, sample: Services
) -> None:
    # GIVEN the local reader and a 4.5 s answer budget
    settings = _plan_settings(pg, worldmm_profile="local", llm_provider="local", answer_budget_s=4.5)
    reader = ScriptedLLM().script(READ_PURPOSE, "On the hallway shelf.")
    services = Services(settings, db=sample.db, llm=ScriptedLLM(), reader_llm=reader, embedder=sample.embedder)
    # WHEN the question reaches the answer path after waiting 5 s behind other requests
    result = answer_question(services, USER, "Where did I leave the spare key?", now=ASKED_AT, waited_s=5.0)
    # THEN the wait counts: the reader's model is not asked, and the composer's sentence is given at once
    assert not reader.calls_for(READ_PURPOSE)
    assert "hallway shelf" in result.answer.lower(), result.answer
    assert "past the answer's 4.5 s deadline" in (result.trace.answer_note or "")
    # AND one that did not wait is read
    fresh = answer_question(services, USER, "Where did I leave the spare key?", now=ASKED_AT)
    assert fresh.answer.startswith("On the hallway shelf."), fresh.answer


def test_a_question_naming_a_rare_thing_no_memory_says_is_not_remembered(pg: LocalDatabase, sample: Services) -> None:
    # GIVEN the local reader, and a memory that never mentions a snorkel
    settings = _plan_settings(pg, worldmm_profile="local", llm_provider="local", answer_budget_s=60.0)
    reader = ScriptedLLM().script(READ_PURPOSE, "In the drawer.")
    services = Services(settings, db=sample.db, llm=ScriptedLLM(), reader_llm=reader, embedder=sample.embedder)
    # WHEN the wearer asks where the snorkel is (the composer alone would quote a sentence about where things are)
    result = answer_question(services, USER, "Where did I leave my snorkel?", now=ASKED_AT)
    # THEN the answer is "I don't remember that.", citing nothing, the reader not asked, and the trace says why
    assert result.answer == NO_MEMORY and not result.trace.citations, result.answer
    assert not reader.calls_for(READ_PURPOSE)
    assert "no memory mentions 'snorkel'" in (result.trace.answer_note or "")
    # AND a thing the memory does mention is answered from it
    kept = answer_question(services, USER, "Where did I leave the spare key?", now=ASKED_AT)
    assert kept.answer != NO_MEMORY and "no memory mentions" not in (kept.trace.answer_note or ""), kept.answer
