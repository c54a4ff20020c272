"""The answer composed from memories: the relevant line, the time in plain words, and no memory without relevance."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.harness import make_settings
from worldmm.llm.scripted import ScriptedLLM
from worldmm.retrieval.compose import best_sentence, describe_when, relevant_memories
from worldmm.retrieval.models import MemoryKind, RetrievedMemory
from worldmm.services import Services

pytestmark = pytest.mark.unit

NOW = datetime(2025, 3, 11, 12, 30, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(
    ("moment", "words"),
    [
        (datetime(2025, 3, 11, 8, 14, tzinfo=UTC), "this morning at 8:14"),
        (datetime(2025, 3, 11, 12, 5, tzinfo=UTC), "this afternoon at 12:05"),
        (datetime(2025, 3, 10, 19, 42, tzinfo=UTC), "yesterday at 19:42"),
        (datetime(2025, 3, 3, 11, 15, tzinfo=UTC), "on Monday 3 March at 11:15"),
        (datetime(2024, 12, 30, 9, 0, tzinfo=UTC), "on Monday 30 December 2024 at 9:00"),
    ],
)
def test_describe_when_says_the_time_relative_to_the_question(moment: datetime, words: str) -> None:
    assert describe_when(moment, NOW) == words


def test_best_sentence_prefers_the_statement_to_the_question_it_answers() -> None:
    services = Services(make_settings(), llm=ScriptedLLM())
    memory = "Hey! Thanks for helping with my slides. Sure, Marco. When is your presentation?\n" + (
        "My presentation is on Friday at two in the afternoon, to the whole team."
    )
    sentence, heard = best_sentence(services, "When is Marco's presentation?", memory)
    assert sentence.startswith("My presentation is on Friday") and not heard


def test_best_sentence_says_when_the_sentence_was_heard_rather_than_captioned() -> None:
    services = Services(make_settings(), llm=ScriptedLLM())
    memory = "At my desk in the office (heard: Me: I am putting my keys in the drawer of my desk.)"
    assert best_sentence(services, "Where are my keys?", memory) == (
        "Me: I am putting my keys in the drawer of my desk.",
        True,
    )


def test_relevant_memories_count_a_rare_shared_word_above_common_ones() -> None:
    # GIVEN memories that all mention the morning, and one that mentions the drink
    services = Services(make_settings(), llm=ScriptedLLM())
    texts = [
        "I walk to the cafe like every morning.",
        "Good morning, every morning.",
        "I only drink one coffee a day.",
        "It is a sunny morning.",
    ]
    memories = [
        RetrievedMemory(id=str(n), memory_type=MemoryKind.EPISODIC, text=t, score=1.0, source="test")
        for n, t in enumerate(texts)
    ]
    # WHEN
    ranked = relevant_memories(services, "What do I drink every morning?", memories)
    # THEN the memory with the word few others share comes first; every memory sharing a word is relevant
    assert ranked[0].text == "I only drink one coffee a day."
    assert len(ranked) == 4
