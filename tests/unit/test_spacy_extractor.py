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


def test_spacy_entities_are_names_and_triples_keep_common_nouns_as_objects(extractor: SpacyExtractor) -> None:
    # GIVEN a caption sentence / WHEN extracted
    result = extractor.extract("Alice put the blue notebook in the desk drawer.")
    # THEN only the named person is an entity (no common noun), and the parse gives two triples
    assert result.entities == ["Alice"]
    assert _spo(result.triples) == [("Alice", "put", "blue notebook"), ("Alice", "put in", "desk drawer")]


def test_spacy_wearer_is_i_and_conjoined_verbs_inherit_the_subject(extractor: SpacyExtractor) -> None:
    # GIVEN the wearer acting twice in one sentence, the second object a pronoun
    result = extractor.extract("I picked up the screwdriver and handed it to Shure.")
    # THEN particles join the verb, "it" is no entity, a name the tagger calls a verb is one, and "I" (the
    # wearer, their facts' subject) is kept as an entity form
    assert _spo(result.triples) == [("I", "pick up", "screwdriver"), ("I", "hand to", "Shure")]
    assert result.entities == ["Shure", "I"]


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


def test_spacy_a_capitalised_word_after_an_unsplit_full_stop_is_no_name(extractor: SpacyExtractor) -> None:
    # GIVEN heard words run together, where the tagger does not split the sentence after "D."
    entities = extractor.entities("I heard: I am giving you vitamin D. Take one tablet a day, Marco.")
    # THEN "Take" (the next sentence's first word, a verb) is not a name; the addressed person is
    assert "Take" not in entities and "Marco" in entities, entities


def test_spacy_extract_many_matches_extract_one_by_one(extractor: SpacyExtractor) -> None:
    texts = ["Alice uses a screwdriver.", "", "I put the notebook on the desk.\nJake: Okay."]
    assert extractor.extract_many(texts) == [extractor.extract(t) for t in texts]


def test_spacy_query_entities(extractor: SpacyExtractor) -> None:
    assert extractor.entities("Where did I leave my blue notebook?") == []
    assert extractor.entities("When did Katrina leave for the Corner Cafe?") == ["Katrina", "Corner Cafe"]


def test_spacy_people_and_places_whatever_label_the_small_tagger_gives(extractor: SpacyExtractor) -> None:
    # GIVEN names the small model labels EVENT ("Katrina"), ORG ("Sophie") or splits ("Doctor" + PERSON "Lee"),
    # beside dates, numbers, an interjection at a sentence's start and common nouns
    result = extractor.extract(
        "Doctor Lee: Thank you, Katrina. Bye, Sophie!\nI am walking to the Green Leaf Market on Tuesday at ten."
    )
    # THEN the people and the place are the entities, once each, and nothing else is
    assert sorted(result.entities) == ["Doctor Lee", "Green Leaf Market", "I", "Katrina", "Sophie"]


def test_spacy_a_fact_is_about_its_line_s_speaker_and_kept_only_when_known(extractor: SpacyExtractor) -> None:
    # GIVEN Katrina's line, the wearer's line, and what was heard with its speakers run together
    labelled = extractor.extract("Katrina: I work at the bakery.\nI buy milk at the market.")
    heard = extractor.extract("I heard: Good morning, Katrina. I work at the bakery. I buy milk at the market.")
    # THEN each first person is its line's speaker; run-together speech yields no fact about an unknown "I"
    assert _spo(labelled.triples) == [("Katrina", "work at", "bakery"), ("I", "buy", "milk"), ("I", "buy at", "market")]
    assert heard.triples == [] and heard.entities == ["Katrina"]


def test_spacy_a_fact_about_no_one_named_is_not_kept(extractor: SpacyExtractor) -> None:
    result = extractor.extract("The plumber comes at eleven o'clock. The doctor is in my calendar.")
    assert result.triples == [] and result.entities == []


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
