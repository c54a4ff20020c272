"""Live multiscale closure on real PostgreSQL: exactly once, all children complete, re-produced when stale."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import select

from tests.support.memory import (
    add_window,
    script_memory_models,
    segment_triples,
    set_window_caption,
    summaries,
)
from worldmm.db.models import LLMUsage, MemoryHistory, MemoryType, ProcessingStatus, Segment, Triple
from worldmm.ingest.summary_schedule import on_session_end, on_window_complete
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services

pytestmark = pytest.mark.integration

USER = "user-ms"
SESSION = "sess-ms"


@pytest.fixture
def llm(scripted_llm: ScriptedLLM) -> ScriptedLLM:
    return script_memory_models(scripted_llm)


def _complete(services: Services, n: int, caption: str | None = None) -> None:
    add_window(services, USER, SESSION, n, caption)
    on_window_complete(services, USER, SESSION, n)


def test_multiscale_3min_summary_produced_when_sixth_window_completes(
    services: Services, llm: ScriptedLLM
) -> None:
    # GIVEN five of the six windows of the first 3 minutes complete
    for n in range(5):
        _complete(services, n)
    assert summaries(services, USER, SESSION) == []
    # WHEN the sixth completes
    _complete(services, 5)
    # THEN one complete 3 min summary exists, spanning the six windows, parent of each of them
    [summary] = summaries(services, USER, SESSION)
    assert (summary.duration_seconds, summary.window_index) == (180, 0)
    assert summary.processing_status == ProcessingStatus.COMPLETE
    assert summary.source_session_id == SESSION
    assert (summary.caption or "").startswith("I went through 6 parts")
    with services.db.unit_of_work(USER) as session:
        windows = session.scalars(select(Segment).where(Segment.duration_seconds == 30)).all()
        assert {w.parent_segment_id for w in windows} == {summary.id}
        assert summary.start_time == min(w.start_time for w in windows)
        assert summary.end_time == max(w.end_time for w in windows)
    # AND episodic triples were extracted from the summary text
    triples = segment_triples(services, USER, summary.id)
    assert triples and all(t.memory_type == MemoryType.EPISODIC for t in triples)
    assert len(llm.calls_for("merge_captions")) == 1
    # AND the merge call's usage row is written with the summary (issue 28: it was missing)
    with services.db.unit_of_work(USER) as session:
        rows = session.scalars(select(LLMUsage).where(LLMUsage.purpose == "merge_captions")).all()
        assert [r.segment_id for r in rows] == [summary.id]


def test_multiscale_pending_or_failed_child_blocks_the_summary(services: Services, llm: ScriptedLLM) -> None:
    # GIVEN windows 0..4 complete and window 5 still pending (or failed)
    for n in range(5):
        add_window(services, USER, SESSION, n)
    add_window(services, USER, SESSION, 5, status=ProcessingStatus.FAILED)
    # WHEN completions are signalled
    for n in range(5):
        on_window_complete(services, USER, SESSION, n)
    # THEN no summary is produced and the model is not asked
    assert summaries(services, USER, SESSION) == []
    assert llm.calls_for("merge_captions") == []


def test_multiscale_shuffled_concurrent_arrival_produces_each_summary_exactly_once(
    services: Services, llm: ScriptedLLM
) -> None:
    # GIVEN the 40 windows of 20 minutes, written and completed in random order by 8 threads at once
    order = list(range(40))
    random.Random(7).shuffle(order)
    for n in order:
        add_window(services, USER, SESSION, n)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda n: on_window_complete(services, USER, SESSION, n), order))
    # THEN six 3 min and two 10 min summaries exist, each merged exactly once, all complete
    rows = summaries(services, USER, SESSION)
    assert [(r.duration_seconds, r.window_index) for r in rows] == [(180, k) for k in range(6)] + [
        (600, 0),
        (600, 1),
    ]
    assert all(r.processing_status == ProcessingStatus.COMPLETE for r in rows)
    assert len(llm.calls_for("merge_captions")) == 8
    # AND each 10 min summary has its three 3 min summaries and two remaining windows as children
    with services.db.unit_of_work(USER) as session:
        ten = {r.window_index: r.id for r in rows if r.duration_seconds == 600}
        for j, parent_id in ten.items():
            kids = session.scalars(select(Segment).where(Segment.parent_segment_id == parent_id)).all()
            assert sorted((k.duration_seconds, k.window_index) for k in kids) == [
                (30, 20 * j + 18),
                (30, 20 * j + 19),
                (180, 3 * j),
                (180, 3 * j + 1),
                (180, 3 * j + 2),
            ]


def test_multiscale_reenriched_child_reproduces_summary_and_replaces_its_triples(
    services: Services, llm: ScriptedLLM
) -> None:
    # GIVEN a produced 3 min summary
    for n in range(6):
        _complete(services, n)
    [before] = summaries(services, USER, SESSION)
    old_triples = {t.id for t in segment_triples(services, USER, before.id)}
    # WHEN window 2 is re-enriched (retrigger force: pending, then complete with a new caption)
    set_window_caption(services, USER, SESSION, 2, "I now see a red bicycle.", ProcessingStatus.PENDING)
    on_window_complete(services, USER, SESSION, 2)  # a stray signal while pending changes nothing
    assert len(llm.calls_for("merge_captions")) == 1
    set_window_caption(services, USER, SESSION, 2, "I now see a red bicycle.", ProcessingStatus.COMPLETE)
    on_window_complete(services, USER, SESSION, 2)
    # THEN the same summary row is re-produced from the new caption, with fresh triples only
    [after] = summaries(services, USER, SESSION)
    assert after.id == before.id and after.caption != before.caption
    assert after.source_fingerprint != before.source_fingerprint
    assert "red bicycle" in llm.calls_for("merge_captions")[-1].prompt_text
    new_triples = {t.id for t in segment_triples(services, USER, after.id)}
    assert new_triples and not (new_triples & old_triples)
    # AND a repeated completion signal with nothing changed merges nothing
    on_window_complete(services, USER, SESSION, 2)
    assert len(llm.calls_for("merge_captions")) == 2


def test_multiscale_session_end_closes_partial_windows(services: Services, llm: ScriptedLLM) -> None:
    # GIVEN an 11 minute session (22 windows) completed live
    for n in range(22):
        _complete(services, n)
    # WHEN the session ends
    on_session_end(services, USER, SESSION)
    # THEN three full 3 min summaries + a partial one (windows 20, 21), one 10 min summary, and no 1 h summary
    rows = summaries(services, USER, SESSION)
    assert [(r.duration_seconds, r.window_index) for r in rows] == [
        (180, 0),
        (180, 1),
        (180, 2),
        (180, 3),
        (600, 0),
    ]
    partial = rows[3]
    assert (partial.caption or "").startswith("I went through 2 parts")
    # AND ending the session again produces nothing new
    calls = len(llm.calls_for("merge_captions"))
    on_session_end(services, USER, SESSION)
    assert len(llm.calls_for("merge_captions")) == calls


def test_multiscale_partial_summary_reproduced_when_a_late_window_lands(
    services: Services, llm: ScriptedLLM
) -> None:
    # GIVEN a session ended after windows 0..3 (a partial 3 min summary of four windows)
    for n in range(4):
        _complete(services, n)
    on_session_end(services, USER, SESSION)
    [partial] = summaries(services, USER, SESSION)
    assert (partial.caption or "").startswith("I went through 4 parts")
    # WHEN a late window (delivered from the DLQ) completes
    _complete(services, 4)
    # THEN the summary is re-produced with five parts
    [updated] = summaries(services, USER, SESSION)
    assert updated.id == partial.id and (updated.caption or "").startswith("I went through 5 parts")


def test_multiscale_10min_summary_runs_semantic_extraction_and_consolidation(
    services: Services, llm: ScriptedLLM
) -> None:
    # GIVEN the 20 windows of a 10 minute block
    for n in range(20):
        _complete(services, n)
    # THEN the 10 min summary yielded a semantic triple, audited as an ADD (memory was empty)
    ten = [r for r in summaries(services, USER, SESSION) if r.duration_seconds == 600]
    assert len(ten) == 1
    with services.db.unit_of_work(USER) as session:
        semantic = session.scalars(select(Triple).where(Triple.memory_type == MemoryType.SEMANTIC)).all()
        history = session.scalars(select(MemoryHistory)).all()
    assert [(t.segment_id, t.predicate) for t in semantic] == [(ten[0].id, "often drinks")]
    assert [(h.event.value, h.applied) for h in history] == [("ADD", True)]
    # AND semantic extraction ran on the 10 min summary only, never on 3 min ones
    [call] = llm.calls_for("semantic_triples")
    assert (ten[0].caption or "-") in call.prompt_text


def test_multiscale_hour_closes_after_its_sixth_10min_summary(services: Services, llm: ScriptedLLM) -> None:
    # GIVEN the 120 windows of one hour, completed in reverse order
    for n in reversed(range(120)):
        _complete(services, n)
    # THEN 18 + 6 + 1 summaries exist and the hour's children are the six 10 min summaries
    rows = summaries(services, USER, SESSION)
    scales = [r.duration_seconds for r in rows]
    assert (scales.count(180), scales.count(600), scales.count(3600)) == (18, 6, 1)
    hour = rows[-1]
    with services.db.unit_of_work(USER) as session:
        kids = session.scalars(select(Segment).where(Segment.parent_segment_id == hour.id)).all()
    assert sorted(k.window_index for k in kids) == list(range(6)) and {k.duration_seconds for k in kids} == {
        600
    }
