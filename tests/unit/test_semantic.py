"""Semantic extraction parsing and consolidation decisions (model scripted, no database)."""

from __future__ import annotations

import uuid

import pytest

from tests.support.harness import make_settings
from worldmm.db.models import ConsolidationEvent
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.openie import ExtractedTriple, UnusableAnswerError
from worldmm.memory.semantic.consolidation import CandidateTriple, decide
from worldmm.memory.semantic.extraction import extract_semantic_triples

pytestmark = pytest.mark.unit

NEW = ExtractedTriple("I", "often drinks", "coffee")


def _candidate(similarity: float = 0.9) -> CandidateTriple:
    return CandidateTriple(uuid.uuid4(), "I", "drinks", "coffee every morning", similarity)


def test_semantic_triples_prompt_sends_summary_and_parses_triples() -> None:
    # GIVEN a model answering with two valid triples, one duplicate and one broken item
    llm = ScriptedLLM().script(
        "semantic_triples",
        '```json\n{"triples": [["I", "often eats", "fruits and snacks"], ["Alice", "is a colleague of", "I"],'
        ' ["i", "often eats", "Fruits and snacks"], ["only two", "parts"]]}\n```',
    )
    # WHEN semantic triples are extracted from a 10 min summary
    triples, warnings, _ = extract_semantic_triples(llm, make_settings(), "I ate fruit while Alice worked.")
    # THEN the summary is in the prompt and valid triples come back, deduplicated, with a warning for the rest
    assert "I ate fruit while Alice worked." in llm.calls_for("semantic_triples")[0].prompt_text
    assert triples == [
        ExtractedTriple("I", "often eats", "fruits and snacks"),
        ExtractedTriple("Alice", "is a colleague of", "I"),
    ]
    assert len(warnings) == 1


@pytest.mark.parametrize("answer", ["I could not find any habits.", '{"triples": "none"}', '{"facts": []}'])
def test_semantic_triples_unusable_answer_raises_rather_than_meaning_no_habits(answer: str) -> None:
    # An answer that is not a list of triples is a failed extraction (retried), never "nothing to extract".
    llm = ScriptedLLM().script("semantic_triples", answer)
    with pytest.raises(UnusableAnswerError):
        extract_semantic_triples(llm, make_settings(), "I ate fruit while Alice worked.")


def test_semantic_triples_an_empty_list_is_nothing_to_extract() -> None:
    llm = ScriptedLLM().script("semantic_triples", '{"triples": []}')
    triples, warnings, _ = extract_semantic_triples(llm, make_settings(), "I sat down.")
    assert triples == [] and warnings == []


def test_semantic_consolidation_without_candidates_adds_without_model_call() -> None:
    llm = ScriptedLLM()
    decision, response = decide(llm, make_settings(), NEW, [])
    assert decision.event == ConsolidationEvent.ADD and decision.stored == NEW
    assert response is None and llm.calls == []


def test_semantic_consolidation_prompt_lists_candidates_and_parses_merge() -> None:
    # GIVEN one similar candidate and a MERGE answer naming it
    candidate = _candidate()
    llm = ScriptedLLM().script(
        "consolidation",
        {
            "event": "MERGE",
            "target_ids": [str(candidate.id)],
            "triple": ["I", "drinks", "coffee daily"],
            "reason": "same habit",
        },
    )
    # WHEN the decision is taken
    decision, _ = decide(llm, make_settings(), NEW, [candidate])
    # THEN the prompt shows the new fact and the candidate with its id; the merge targets it
    prompt = llm.calls_for("consolidation")[0].prompt_text
    assert str(candidate.id) in prompt and '"often drinks"' in prompt
    assert decision.event == ConsolidationEvent.MERGE
    assert decision.targets == (candidate.id,)
    assert decision.stored == ExtractedTriple("I", "drinks", "coffee daily")
    assert decision.reason == "same habit"


def test_semantic_consolidation_drops_unknown_targets_and_corrects_the_event() -> None:
    # GIVEN an UPDATE that names an id not among the candidates
    llm = ScriptedLLM().script(
        "consolidation", {"event": "UPDATE", "target_ids": [str(uuid.uuid4())], "reason": "x"}
    )
    decision, _ = decide(llm, make_settings(), NEW, [_candidate()])
    # THEN nothing unknown is touched: the UPDATE becomes an ADD of the new fact
    assert decision.event == ConsolidationEvent.ADD and decision.targets == () and decision.stored == NEW
    assert decision.proposed == ConsolidationEvent.UPDATE


def test_semantic_consolidation_remove_without_targets_becomes_none() -> None:
    llm = ScriptedLLM().script("consolidation", {"event": "REMOVE", "target_ids": [], "reason": "x"})
    decision, _ = decide(llm, make_settings(), NEW, [_candidate()])
    assert decision.event == ConsolidationEvent.NONE and decision.stored is None


def test_semantic_consolidation_unparsable_answer_keeps_the_new_fact() -> None:
    llm = ScriptedLLM().script("consolidation", "no idea")
    decision, _ = decide(llm, make_settings(), NEW, [_candidate()])
    assert decision.event == ConsolidationEvent.ADD and decision.stored == NEW
    assert "unparsable" in decision.reason
