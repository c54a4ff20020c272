"""One contract for both extraction adapters: the LLM prompts (scripted model) and the spaCy pipeline."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.support.harness import make_settings
from worldmm.db.models import ConsolidationEvent
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.llm.usage import UsageLog
from worldmm.memory.entities import Candidate
from worldmm.memory.episodic.extractor import Extractor, LLMExtractor, build_extractor
from worldmm.memory.episodic.spacy_extractor import SpacyExtractor
from worldmm.memory.openie import ExtractedTriple

pytestmark = pytest.mark.integration

CAPTION = "Alice put the blue notebook in the desk drawer."
SECOND = "I picked up the screwdriver and handed it to Shure."


def _ner(request: LLMRequest) -> dict[str, Any]:
    text = request.prompt_text
    names = [n for n in ("Alice", "blue notebook", "desk drawer", "screwdriver", "Shure") if n in text]
    return {"entities": names}


def _triples(request: LLMRequest) -> dict[str, Any]:
    if "Alice put" in request.prompt_text:
        return {"triples": [["Alice", "put", "blue notebook"], ["Alice", "put in", "desk drawer"]]}
    return {"triples": [["I", "pick up", "screwdriver"], ["I", "hand to", "Shure"]]}


def _confirm(request: LLMRequest) -> dict[str, Any]:
    pairs = [line for line in request.prompt_text.splitlines() if '| known: "' in line]
    return {"decisions": [{"index": i, "same": '"notebooks"' in p} for i, p in enumerate(pairs, start=1)]}


def _scripted() -> ScriptedLLM:
    return (
        ScriptedLLM()
        .script("ner", _ner)
        .script("episodic_triples", _triples)
        .script("entity_confirm", _confirm)
        .script("semantic_triples", {"triples": [["Alice", "keeps notebooks in", "desk drawer"]]})
    )


@pytest.fixture(params=["llm", "spacy"])
def extractor(request: pytest.FixtureRequest) -> Extractor:
    settings = make_settings(extraction_provider=request.param)
    return build_extractor(settings, _scripted)


def test_extractor_finds_the_actor_and_the_object(extractor: Extractor) -> None:
    # the actor is an entity; the object is in her fact (spaCy keeps things as literal objects, issue 62)
    result = extractor.extract(CAPTION)
    assert "Alice" in result.entities
    assert any(t.subject == "Alice" and "notebook" in t.object for t in result.triples)


def test_extractor_triple_subjects_are_entity_forms_or_the_wearer(extractor: Extractor) -> None:
    for result in extractor.extract_many([CAPTION, SECOND]):
        assert result.triples
        known = {e.lower() for e in result.entities} | {"i"}
        assert all(t.subject.lower() in known for t in result.triples)


def test_extractor_many_keeps_order_and_matches_single_calls(extractor: Extractor) -> None:
    assert extractor.extract_many([SECOND, CAPTION]) == [extractor.extract(SECOND), extractor.extract(CAPTION)]


def test_extractor_query_entities(extractor: Extractor) -> None:
    assert "Shure" in extractor.entities("What did I hand to Shure?")


def test_extractor_semantic_triples_from_a_summary(extractor: Extractor) -> None:
    triples = extractor.semantic_triples(CAPTION).triples
    assert triples and all(isinstance(t, ExtractedTriple) for t in triples)
    assert any(t.subject == "Alice" for t in triples)


def test_extractor_confirms_a_plural_but_not_another_name(extractor: Extractor) -> None:
    same = Candidate("notebooks", uuid.uuid4(), "notebook", 0.8)
    other = Candidate("Kate", uuid.uuid4(), "Katrina", 0.7)
    assert extractor.confirm_same([same, other], "I keep notebooks.") == {"notebooks"}


def test_extractor_adds_a_fact_with_no_similar_one_without_a_model_call(extractor: Extractor) -> None:
    decision, response = extractor.decide(ExtractedTriple("I", "drink", "coffee"), [])
    assert (decision.event, response) == (ConsolidationEvent.ADD, None)


def test_llm_extractor_records_its_model_calls() -> None:
    usage = UsageLog()
    LLMExtractor(_scripted(), make_settings()).extract(CAPTION, usage)
    assert [purpose for purpose, _ in usage.entries] == ["ner", "episodic_triples"]


def test_extraction_provider_defaults_to_spacy_beside_the_small_local_llm() -> None:
    def no_llm() -> Any:
        raise AssertionError("the spaCy path must not build an LLM")

    assert isinstance(build_extractor(make_settings(llm_provider="local"), no_llm), SpacyExtractor)
    assert isinstance(build_extractor(make_settings(), _scripted), LLMExtractor)
    aws = make_settings(worldmm_profile="aws", llm_provider="openai")
    assert isinstance(build_extractor(aws, _scripted), LLMExtractor)
