"""The generator of fresh days (bench/worldgen): deterministic, every answer said, unanswerable never said.

Only seed 1 (the committed development world) is drawn here: the held-out days are made later with a seed
nobody has looked at.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import faker  # noqa: F401  (the dev extra installs it; the generator needs it)
import pytest

from bench.worldgen.days import MAX_WORDS_PER_WINDOW, make_days
from bench.worldgen.render import write_day
from bench.worldgen.world import faker_lists, key_word, mentions_sample, word_lists
from worldmm.demo import SampleQuestion, load_questions

pytestmark = pytest.mark.unit

DEV_SET = Path(__file__).resolve().parents[2] / "examples" / "world-dev"
SAMPLE_NAMES = ("Katrina", "Emma", "Marco", "Nina", "Doctor Lee", "Daniel", "Pepper", "Corner Cafe", "Northwind Labs",
                "Riverside Clinic", "Oak Avenue", "blue notebook", "vitamin D", "cappuccino")  # fmt: skip
KINDS = {"paraphrase", "request", "list", "before-after", "count", "price", "time", "place", "reason", "pronoun",
         "people", "unanswerable"}  # fmt: skip


@pytest.fixture(scope="module")
def days():
    return make_days(1, 2)[1]


def _said(day) -> str:
    return "\n".join(day.script_lines())


def test_the_same_seed_gives_the_same_days_and_questions() -> None:
    # GIVEN two worlds drawn from seed 1
    _, first = make_days(1, 2)
    _, second = make_days(1, 2)
    # THEN their scripts, voices and questions are the same
    assert [d.script_lines() for d in first] == [d.script_lines() for d in second]
    assert [d.voices for d in first] == [d.voices for d in second]
    assert [[q.row() for q in d.questions] for d in first] == [[q.row() for q in d.questions] for d in second]
    # AND the two days differ from each other (a day is not a copy of the one before)
    assert first[0].script_lines() != first[1].script_lines()


def test_every_answerable_question_is_answered_by_its_own_days_script(days) -> None:
    for day in days:
        said = _said(day)
        for q in (q for q in day.questions if not q.refusal):
            # The demo's own check: each fact (or one of its `a|b` spellings) is in what was said that day.
            expected = SampleQuestion(q.id, q.kind, q.question, q.answer, q.facts)
            assert expected.is_right(said), f"{q.id} {q.question!r}: {q.facts} not said on day {day.number}"


def test_every_answerable_fact_is_said_in_the_windows_of_its_own_episode(days) -> None:
    for day in days:
        for q in (q for q in day.questions if not q.refusal):
            assert q.windows, q.id
            said = "\n".join(text for i in q.windows for _, text in day.windows[i].lines)
            expected = SampleQuestion(q.id, q.kind, q.question, q.answer, q.facts)
            assert expected.is_right(said), f"{q.id} {q.question!r}: {q.facts} not in windows {q.windows}"


def test_a_person_a_question_names_is_named_in_the_windows_that_answer_it() -> None:
    # A speaker is known by the name said to them, not by the voice alone: "Why can't my sister come?" needs her
    # name said where she gives the reason (her relation may be said elsewhere).
    world, made = make_days(1, 2)
    for day in made:
        for q in (q for q in day.questions if not q.refusal):
            said = "\n".join(text for i in q.windows for _, text in day.windows[i].lines)
            for person in world.people:
                if re.search(rf"\b{person.name}\b", q.question) or f"my {person.relation}" in q.question:
                    assert re.search(rf"\b{person.name}\b", said), f"{q.id} {q.question!r}: {person.name} unsaid"


def test_unanswerable_questions_ask_about_what_no_day_said(days) -> None:
    said = "\n".join(_said(day) for day in days).casefold()
    refusals = [q for day in days for q in day.questions if q.refusal]
    assert refusals
    for q in refusals:
        assert q.absent and not q.facts and q.answer == "I don't remember that."
        for phrase in q.absent:
            assert phrase.casefold() in q.question.casefold()
            assert not re.search(rf"\b{re.escape(key_word(phrase))}", said), f"{q.question!r}: {phrase!r} was said"


def test_no_day_uses_the_sample_recordings_vocabulary(days) -> None:
    text = "\n".join(
        [line for day in days for line in day.script_lines()]
        + [json.dumps(q.row()) for day in days for q in day.questions]
        + [name for day in days for name in day.voices]
    )
    for name in SAMPLE_NAMES:
        assert not re.search(rf"\b{re.escape(name)}\b", text, re.I), name
    assert not mentions_sample(text)


def test_the_lists_hold_hundreds_of_entries_and_no_sample_words() -> None:
    words, names = word_lists(), faker_lists()
    for section in ("objects", "foods", "activities", "events", "venues"):
        assert len(words[section]) >= 200, section
    for section in ("shops", "spots", "reasons"):
        assert len(words[section]) >= 75, section
    for section in ("female_names", "male_names", "surnames", "jobs"):
        assert len(names[section]) >= 200, section
    every = [entry for entries in (*words.values(), *names.values()) for entry in entries]
    assert not [entry for entry in every if mentions_sample(entry)]


def test_a_day_is_about_fifteen_minutes_with_fifty_questions_of_every_kind(days) -> None:
    for day in days:
        assert 25 <= len(day.windows) <= 32
        assert all(window.words() <= MAX_WORDS_PER_WINDOW for window in day.windows)
        assert len(day.questions) >= 50
        refusals = sum(q.refusal for q in day.questions)
        assert 0.08 <= refusals / len(day.questions) <= 0.15
        assert {q.kind for q in day.questions} == KINDS
        assert len({q.id for q in day.questions}) == len(day.questions)
        assert len({q.question for q in day.questions}) == len(day.questions)
    assert days[1].start.date().toordinal() - days[0].start.date().toordinal() == 1
    assert days[0].session_id != days[1].session_id


def test_no_voice_variant_is_shared_by_two_people_of_a_day(days) -> None:
    for day in days:
        variants = [voice.split("+")[1].lower() for voice in day.voices.values()]
        assert len(variants) == len(set(variants)), day.voices


def test_a_written_day_loads_with_the_demos_question_loader(tmp_path, days) -> None:
    world, generated = make_days(1, 1)
    write_day(world, generated[0], tmp_path / "day-1", media=False)
    loaded = load_questions(tmp_path / "day-1")
    assert [q.id for q in loaded] == [q.id for q in generated[0].questions]
    metadata = json.loads((tmp_path / "day-1" / "metadata.json").read_text())
    assert metadata["window_count"] == len(generated[0].windows)
    rows = [json.loads(line) for line in (tmp_path / "day-1" / "script.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == generated[0].script_lines()


def test_the_committed_development_days_are_seed_ones_and_answerable_from_their_scripts(days) -> None:
    for day in days:
        folder = DEV_SET / f"day-{day.number}"
        rows = [json.loads(line) for line in (folder / "script.jsonl").read_text().splitlines()]
        said = "\n".join(r["text"] for r in rows)
        assert [r["text"] for r in rows] == day.script_lines(), "the generator changed: regenerate examples/world-dev"
        questions = load_questions(folder)
        assert [q.question for q in questions] == [q.question for q in day.questions]
        assert all(q.is_right(said) for q in questions if not q.refusal)
        assert (folder / "audio.m4a").is_file() and len(list(folder.glob("window_*"))) == len(day.windows)
