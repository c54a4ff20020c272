"""Open IE parsing: model output is untrusted — caps, truncation, empty rejection, partial results."""

from __future__ import annotations

import json

import pytest

from tests.support.harness import make_settings
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.openie import extract_entities, extract_triples, parse_entities, parse_triples

pytestmark = pytest.mark.unit


def test_ingest_openie_ner_parse_strips_think_and_fences():
    text = '<think>people...</think>\n```json\n{"entities": ["Kate", "kitchen"]}\n```'
    assert parse_entities(text, 30, 200) == (["Kate", "kitchen"], [])


def test_ingest_openie_ner_parse_drops_empty_and_non_strings_and_dedupes():
    entities, warnings = parse_entities(
        json.dumps({"entities": ["Kate", "", None, 7, "  kate ", {"x": 1}]}), 30, 200
    )
    assert entities == ["Kate", "7"]
    assert len(warnings) == 3


def test_ingest_openie_ner_parse_caps_count_and_truncates_fields():
    names = [f"person {i}" for i in range(40)] + ["x" * 500]
    entities, warnings = parse_entities(json.dumps({"entities": ["y" * 500, *names]}), 30, 200)
    assert len(entities) == 30 and entities[0] == "y" * 200
    assert any("capped at 30" in w for w in warnings) and any("truncated" in w for w in warnings)


def test_ingest_openie_garbage_answer_yields_empty_result_with_warning():
    entities, warnings = parse_entities("I could not find any entities, sorry.", 30, 200)
    assert entities == [] and warnings and "unparsable" in warnings[0]
    triples, warnings = parse_triples('{"triples": "none"}', 60, 200)
    assert triples == [] and warnings == ["triples: answer has no list"]


def test_ingest_openie_triple_parse_keeps_valid_items_and_reports_bad_ones():
    raw = {
        "triples": [
            ["I", "stand at", "dining table"],
            {"subject": "Katrina", "predicate": "asks about", "object": "tomorrow's schedule"},
            ["I", "", "x"],  # empty predicate
            ["only", "two"],  # wrong arity
            "I like tea",  # not a triple
            ["i", "Stand at", "Dining table"],  # duplicate
            ["I", "holds", "p" * 300],  # truncated
        ]
    }
    triples, warnings = parse_triples(json.dumps(raw), 60, 200)
    assert [(t.subject, t.predicate, t.object) for t in triples[:2]] == [
        ("I", "stand at", "dining table"),
        ("Katrina", "asks about", "tomorrow's schedule"),
    ]
    assert len(triples) == 3 and len(triples[2].object) == 200
    assert len(warnings) == 4


def test_ingest_openie_triple_parse_caps_count():
    raw = {"triples": [["I", "see", f"thing {i}"] for i in range(80)]}
    triples, warnings = parse_triples(json.dumps(raw), 60, 200)
    assert len(triples) == 60 and warnings == ["triples: capped at 60"]


def test_ingest_openie_prompts_carry_text_entities_and_truncated_input():
    settings = make_settings(ingest_max_input_chars=50)
    llm = ScriptedLLM(
        {"ner": {"entities": ["Kate"]}, "episodic_triples": {"triples": [["Kate", "holds", "mug"]]}}
    )
    text = "Kate holds a mug. " + "z" * 100
    entities, _, response = extract_entities(llm, settings, text)
    triples, _, _ = extract_triples(llm, settings, text, entities)
    assert entities == ["Kate"] and triples[0].text == "Kate holds mug"
    ner_prompt = llm.calls_for("ner")[0].prompt_text
    assert "Kate holds a mug." in ner_prompt and "z" * 32 in ner_prompt and "z" * 33 not in ner_prompt
    assert "Entities: Kate" in llm.calls_for("episodic_triples")[0].prompt_text
    assert llm.calls_for("ner")[0].response_schema is not None and response.completion_tokens > 0


def test_ingest_openie_ner_parse_drops_sentences_posing_as_entities():
    answer = '{"entities": ["Katrina", "I am taking my keys and new notebook from the hallway shelf", "blue notebook"]}'
    entities, warnings = parse_entities(answer, 10, 200)
    assert entities == ["Katrina", "blue notebook"]
    assert any("sentence" in w for w in warnings)
