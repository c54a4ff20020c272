"""Episodic retrieval on PostgreSQL: entity seeds by specificity → PPR per scale, fused with BM25 and vectors."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from tests.support.harness import change_settings
from tests.support.retrieval import BASE, MemoryWriter
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.retrieval.episodic_retriever import graph_ranking, query_names, query_seed_entities, retrieve_episodic
from worldmm.retrieval.timeref import TimeReference
from worldmm.services import Services

pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 21, 12, 0, tzinfo=UTC)


def _pick_caption(fragment: str):
    """A reranker that selects the candidates whose caption contains `fragment`, in order."""

    def rerank(request: LLMRequest) -> dict[str, list[int]]:
        picked = [
            int(number)
            for number, caption in re.findall(r"^\[(\d+)\] .*?<memory>(.*?)</memory>", request.prompt_text, re.M)
            if fragment in caption
        ]
        return {"selected": picked}

    return rerank


@pytest.fixture
def day(services: Services) -> MemoryWriter:
    """A morning: coffee with Katrina, a bike repair, and a 3-minute summary."""
    w = MemoryWriter(services, "u1")
    coffee = w.segment("I had coffee with Katrina at the corner cafe")
    w.triple(coffee, "I", "had coffee with", "Katrina")
    w.triple(coffee, "Katrina", "sat in", "corner cafe")
    bike = w.segment("I fixed the flat tyre of my bike in the garage")
    w.triple(bike, "I", "fixed", "bike")
    w.triple(bike, "bike", "stood in", "garage")
    summary = w.segment("A slow morning: coffee with Katrina, then bike repairs", duration=180)
    w.triple(summary, "I", "spent the morning with", "Katrina")
    w.triple(summary, "I", "repaired", "bike")
    return w


def test_query_names_are_word_runs_with_naive_singulars() -> None:
    names = query_names("Where are my car keys?")
    assert {"car keys", "car key", "keys", "key", "where are my car"} <= set(names)


def test_episodic_seeds_are_the_entities_the_query_names_without_a_model(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    seeds = query_seed_entities(services, "u1", "When did I see katrina at the Corner Cafe?")
    assert {s for s in seeds} == {day.entities[n].bytes for n in ("I", "Katrina", "corner cafe")}
    assert scripted_llm.calls == []


def test_episodic_hub_entity_does_not_decide_the_ranking(services: Services) -> None:
    # GIVEN "I" is in every triple of 12 windows, and "screwdriver" in one
    w = MemoryWriter(services, "u1")
    for i in range(12):
        w.triple(w.segment(f"I walked around room {i}", embed=False), "I", "walked around", f"room {i}")
    target = w.segment("I handed over the tool", embed=False)
    w.triple(target, "I", "handed", "screwdriver")
    seeds = query_seed_entities(services, "u1", "Who did I give the screwdriver to?")
    # WHEN the graph ranks segments from both seeds
    ranking = graph_ranking(services, "u1", seeds, TimeReference(until=NOW), [30], pool=5)
    # THEN the segment of the specific entity leads, not a hub-only segment
    assert ranking[0] == target


def test_episodic_retriever_finds_the_window_without_a_model_call(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    # GIVEN the local profile's small LLM: no reranker
    change_settings(services, episodic_rerank=False)
    result = retrieve_episodic(services, "u1", "When did I have coffee with Katrina?", now=NOW)
    # THEN the coffee window is found, and a memory of that coffee (the window or the morning's summary
    # that paraphrases it; relevance decides across scales) leads, not the bike repair
    texts = [item.text for item in result.items]
    assert any("corner cafe" in t for t in texts), texts
    assert "coffee with Katrina" in texts[0], texts
    assert result.items[0].start_time is not None
    assert scripted_llm.calls == []
    assert len(result.items) <= services.settings.episodic_final_k


def test_episodic_retriever_reranks_across_scales_with_a_capable_model(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    change_settings(services, episodic_rerank=True)
    scripted_llm.script("cross_scale_rerank", _pick_caption("corner cafe"))
    result = retrieve_episodic(services, "u1", "When did I see Katrina?", now=NOW, limit=1)
    assert [m.text for m in result.items] == ["I had coffee with Katrina at the corner cafe"]
    assert result.items[0].source == "rerank"
    prompt = scripted_llm.calls_for("cross_scale_rerank")[0].prompt_text
    assert "(180s segment" in prompt and "(30s segment" in prompt
    assert result.prompt_tokens > 0


def test_episodic_retriever_rerank_failure_keeps_the_fused_order(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    change_settings(services, episodic_rerank=True)
    scripted_llm.script("cross_scale_rerank", "no idea")
    result = retrieve_episodic(services, "u1", "Katrina coffee", now=NOW, limit=1)
    assert result.reason == "rerank failed: fused order"
    assert result.items and "Katrina" in result.items[0].text


def test_episodic_retriever_without_known_entities_still_answers_by_text(
    services: Services, day: MemoryWriter
) -> None:
    change_settings(services, episodic_rerank=False)
    result = retrieve_episodic(services, "u1", "Did I repair the flat tyre?", now=NOW)
    assert any("flat tyre" in m.text for m in result.items)


def test_episodic_retriever_is_as_of_the_question(services: Services, day: MemoryWriter) -> None:
    change_settings(services, episodic_rerank=False)
    later = day.segment("I had coffee with Katrina again", start=NOW + timedelta(hours=1))
    day.triple(later, "I", "had coffee with", "Katrina")
    result = retrieve_episodic(services, "u1", "coffee with Katrina", now=BASE + timedelta(hours=1))
    assert result.items and all(m.id != str(later) for m in result.items)


def test_episodic_trace_names_the_range_it_searched(services: Services, day: MemoryWriter) -> None:
    change_settings(services, episodic_rerank=False)
    named = retrieve_episodic(services, "u1", "Did I have coffee with Katrina yesterday?", now=NOW)
    assert named.items and named.searched is not None and named.searched.endswith("(yesterday)")
    assert named.reason is not None and named.reason.endswith(f"searched {named.searched}")
    # a named day that holds nothing: everything before the question was searched, and the trace says only that
    empty = retrieve_episodic(services, "u1", "Did I have coffee with Katrina on Monday?", now=NOW)
    assert empty.items and empty.searched is None
    assert empty.reason is not None and empty.reason.endswith("searched everything before it was asked")


def test_episodic_retriever_never_returns_another_users_memories(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    other = MemoryWriter(services, "u2")
    other.triple(other.segment("Katrina's secret diary entry"), "Katrina", "wrote", "diary")
    change_settings(services, episodic_rerank=True)
    scripted_llm.script("cross_scale_rerank", lambda r: {"selected": list(range(1, 10))})
    result = retrieve_episodic(services, "u1", "Katrina diary", now=NOW, limit=1)
    assert all("diary" not in m.text for m in result.items)
    candidates = scripted_llm.calls_for("cross_scale_rerank")[0].prompt_text.split("Candidates:")[1]
    assert "diary" not in candidates
