"""The spaCy extraction adapter on fixed sentences: exact entities and triples (no model, no database)."""

from __future__ import annotations

import uuid

import pytest

from tests.support.harness import make_settings
from worldmm.db.models import ConsolidationEvent
from worldmm.memory.entities import Candidate
from worldmm.memory.episodic.spacy_extractor import SpacyExtractor, SpacyModelError, load_pipeline
from worldmm.memory.openie import ExtractedTriple
from worldmm.memory.semantic.consolidation import CandidateTriple

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def extractor() -> SpacyExtractor:
    return SpacyExtractor(make_settings(extraction_provider="spacy"))


def _spo(triples: list[ExtractedTriple]) -> list[tuple[str, str, str]]:
    return [(t.subject, t.predicate, t.object) for t in triples]


def test_spacy_extracts_noun_chunks_without_determiners_and_verb_triples(extractor: SpacyExtractor) -> None:
    # GIVEN a caption sentence / WHEN extracted
    result = extractor.extract("Alice put the blue notebook in the desk drawer.")
    # THEN the named person and the cleaned noun chunks are entities, and the parse gives two triples
    assert result.entities == ["Alice", "blue notebook", "desk drawer"]
    assert _spo(result.triples) == [("Alice", "put", "blue notebook"), ("Alice", "put in", "desk drawer")]


def test_spacy_wearer_is_i_and_conjoined_verbs_inherit_the_subject(extractor: SpacyExtractor) -> None:
    # GIVEN the wearer acting twice in one sentence, the second object a pronoun
    result = extractor.extract("I picked up the screwdriver and handed it to Shure.")
    # THEN particles join the verb, "it" is no entity, and "I" is kept as an entity form
    assert _spo(result.triples) == [("I", "pick up", "screwdriver"), ("I", "hand to", "Shure")]
    assert result.entities == ["screwdriver", "Shure", "I"]


def test_spacy_drops_pronoun_only_chunks_and_resolves_relative_subjects(extractor: SpacyExtractor) -> None:
    result = extractor.extract("Katrina handed it to Alice, who then passed it to Tasha. They smiled at me.")
    assert _spo(result.triples) == [("Katrina", "hand to", "Alice"), ("Alice", "pass to", "Tasha")]
    assert "it" not in [e.lower() for e in result.entities]
    assert "they" not in [e.lower() for e in result.entities]


def test_spacy_transcript_line_speaker_is_the_first_person(extractor: SpacyExtractor) -> None:
    # GIVEN a transcript line with a timestamp and a speaker
    result = extractor.extract("[11:09:54] Shure: I don't like coffee, I want to buy milk.")
    # THEN the speaker is an entity and the subject; negation and "to"-complements stay on the predicate
    assert result.entities[0] == "Shure"
    assert _spo(result.triples) == [("Shure", "not like", "coffee"), ("Shure", "want to buy", "milk")]


def test_spacy_lines_of_a_labelled_transcript_are_each_their_speakers(extractor: SpacyExtractor) -> None:
    # GIVEN the local transcriber's lines: Marco's, then mine (no name), then an unnamed voice's
    result = extractor.extract(
        "Marco: I will fix slide three this evening.\nI am at the doctor tomorrow.\nSomeone: I sell tickets."
    )
    triples = _spo(result.triples)
    # THEN Marco fixes the slide, I am at the doctor (not Marco), and the unnamed voice is nobody known
    assert ("Marco", "fix", "slide") in triples and ("I", "be at", "doctor") in triples, triples
    assert not any("Someone" in (s, o) for s, _, o in triples) and "Someone" not in result.entities


def test_spacy_extract_many_matches_extract_one_by_one(extractor: SpacyExtractor) -> None:
    texts = ["Alice uses a screwdriver.", "", "I put the notebook on the desk.\nJake: Okay."]
    assert extractor.extract_many(texts) == [extractor.extract(t) for t in texts]


def test_spacy_query_entities(extractor: SpacyExtractor) -> None:
    assert extractor.entities("Where did I leave my blue notebook?") == ["blue notebook"]


def test_spacy_confirms_only_lemma_equal_forms(extractor: SpacyExtractor) -> None:
    # GIVEN near neighbours by embedding: a plural, and a different name
    same = Candidate("notebooks", uuid.uuid4(), "notebook", 0.8)
    other = Candidate("Kate", uuid.uuid4(), "Katrina", 0.7)
    # THEN only the plural is the same entity
    assert extractor.confirm_same([same, other], "") == {"notebooks"}


def test_spacy_consolidation_keeps_near_identical_facts_once(extractor: SpacyExtractor) -> None:
    new = ExtractedTriple("I", "drink", "coffee")
    known = CandidateTriple(uuid.uuid4(), "I", "drink", "coffee", 0.99)
    similar = CandidateTriple(uuid.uuid4(), "I", "drink", "tea", 0.8)
    assert extractor.decide(new, [known])[0].event == ConsolidationEvent.NONE
    decision, response = extractor.decide(new, [similar])
    assert (decision.event, decision.targets, response) == (ConsolidationEvent.ADD, (), None)


def test_spacy_missing_pipeline_is_a_clear_error() -> None:
    with pytest.raises(SpacyModelError, match="not installed"):
        load_pipeline("no_such_spacy_pipeline")
