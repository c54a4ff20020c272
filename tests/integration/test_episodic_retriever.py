"""Episodic retrieval on PostgreSQL (spec 001 "Query Path"): NER seeds → PPR per scale → rerank."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from tests.support_retrieval import MemoryWriter
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.retrieval.episodic_retriever import retrieve_episodic
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


def test_episodic_retriever_ranks_by_ppr_from_query_entities_and_reranks(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    # GIVEN NER finds "Katrina" in the question, and the reranker keeps the 30 s coffee window
    scripted_llm.script("ner", {"entities": ["Katrina"]})
    scripted_llm.script("cross_scale_rerank", _pick_caption("corner cafe"))
    # WHEN
    result = retrieve_episodic(services, "u1", "When did I see Katrina?", now=NOW)
    # THEN the coffee window is returned, chosen by the reranker
    assert [m.text for m in result.items] == ["I had coffee with Katrina at the corner cafe"]
    assert result.items[0].source == "rerank"
    assert result.items[0].start_time is not None
    assert result.reason is None
    # AND the reranker saw candidates from both scales, the Katrina window ranked above the bike one
    prompt = scripted_llm.calls_for("cross_scale_rerank")[0].prompt_text
    assert "(180s segment" in prompt and "(30s segment" in prompt
    assert prompt.index("corner cafe") < prompt.index("flat tyre")
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    # AND the extraction model ran NER and rerank
    assert {c.model for c in scripted_llm.calls} == {services.settings.extraction_model}


def test_episodic_retriever_takes_top_k_per_scale(services: Services, scripted_llm: ScriptedLLM) -> None:
    # GIVEN 14 windows and 7 three-minute summaries all about Katrina
    w = MemoryWriter(services, "u1")
    for i in range(14):
        w.triple(w.segment(f"window {i} with Katrina"), "I", f"talked {i} with", "Katrina")
    for i in range(7):
        w.triple(w.segment(f"summary {i} with Katrina", duration=180), "I", f"met {i}", "Katrina")
    scripted_llm.script("ner", {"entities": ["Katrina"]})
    scripted_llm.script("cross_scale_rerank", {"selected": [1, 2, 3]})
    # WHEN
    result = retrieve_episodic(services, "u1", "Katrina?", now=NOW)
    # THEN the reranker got 10 windows and 5 summaries, and 3 memories come back
    prompt = scripted_llm.calls_for("cross_scale_rerank")[0].prompt_text
    assert prompt.count("(30s segment") == 10
    assert prompt.count("(180s segment") == 5
    assert len(result.items) == 3


def test_episodic_retriever_without_seed_entities_falls_back_to_hybrid(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    # GIVEN NER finds nothing the user's graph knows
    scripted_llm.script("ner", {"entities": ["Zanzibar"]})
    # WHEN
    result = retrieve_episodic(services, "u1", "Did I repair the bike tyre?", now=NOW)
    # THEN full-text search still finds the bike window, and the reason says why
    assert result.reason is not None and result.reason.startswith("hybrid fallback")
    assert any("flat tyre" in m.text for m in result.items)
    assert {m.source for m in result.items} == {"hybrid"}
    assert scripted_llm.calls_for("cross_scale_rerank") == []


def test_episodic_retriever_rerank_failure_falls_back_to_hybrid(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    # GIVEN the reranker answers garbage
    scripted_llm.script("ner", {"entities": ["Katrina"]})
    scripted_llm.script("cross_scale_rerank", "no idea")
    # WHEN
    result = retrieve_episodic(services, "u1", "Katrina coffee", now=NOW)
    # THEN the PPR ranking fused with text search answers
    assert result.reason == "hybrid fallback: rerank failed"
    assert result.items and "Katrina" in result.items[0].text


def test_episodic_retriever_ner_failure_still_answers(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    def fail(request: LLMRequest) -> dict[str, list[str]]:
        raise RuntimeError("model down")

    scripted_llm.script("ner", fail)
    result = retrieve_episodic(services, "u1", "bike garage", now=NOW)
    assert result.items and "bike" in result.items[0].text


def test_episodic_retriever_never_returns_another_users_memories(
    services: Services, scripted_llm: ScriptedLLM, day: MemoryWriter
) -> None:
    other = MemoryWriter(services, "u2")
    other.triple(other.segment("Katrina's secret diary entry"), "Katrina", "wrote", "diary")
    scripted_llm.script("ner", {"entities": ["Katrina"]})
    scripted_llm.script("cross_scale_rerank", lambda r: {"selected": list(range(1, 10))})
    result = retrieve_episodic(services, "u1", "Katrina diary", now=NOW)
    assert all("diary" not in m.text for m in result.items)
    candidates = scripted_llm.calls_for("cross_scale_rerank")[0].prompt_text.split("Candidates:")[1]
    assert "diary" not in candidates
