"""The local reader: its short answer is shown only when the sentence it rests on states every word of it."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial

import pytest

from tests.support.harness import make_settings
from worldmm.llm.scripted import ScriptedLLM
from worldmm.retrieval.compose import compose_answer, rank_sentences
from worldmm.retrieval.models import MemoryKind, RetrievedMemory
from worldmm.retrieval.reader import JUDGE_PURPOSE, READ_PURPOSE, read_answer, rerank
from worldmm.services import Services

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("postgres_lexemes")]

NOW = datetime(2025, 3, 11, 12, 30, tzinfo=UTC)
MEMORIES = [
    RetrievedMemory(
        id=str(n),
        memory_type=MemoryKind.EPISODIC,
        text=text,
        score=1.0,
        source="test",
        start_time=datetime(2025, 3, 11, 8, n, tzinfo=UTC),
        end_time=datetime(2025, 3, 11, 8, n, 30, tzinfo=UTC),
        duration_seconds=30,
    )
    for n, text in enumerate(
        [
            "I heard: Good morning, Katrina, I am making breakfast in the kitchen.",
            "I heard: I order at the cafe: yes please, Emma, a large cappuccino. That is four dollars fifty.",
        ]
    )
]


def _answer(question: str, reply: str) -> tuple[str, ScriptedLLM]:
    llm = ScriptedLLM().script(READ_PURPOSE, reply)
    services = Services(make_settings(), llm=llm)
    return compose_answer(services, question, MEMORIES, NOW, partial(read_answer, services)).answer, llm


def test_a_short_answer_its_sentence_states_is_shown_with_that_sentence() -> None:
    answer, _ = _answer("What do I order at the cafe?", "A large cappuccino.")
    assert answer.startswith("A large cappuccino. (this morning at 8:01, heard:"), answer


@pytest.mark.parametrize("reply", ["A small latte.", "Emma orders tea.", "unknown"])
def test_an_answer_its_sentence_does_not_state_falls_back_to_the_quoted_sentence(reply: str) -> None:
    answer, _ = _answer("What do I order at the cafe?", reply)
    assert answer.startswith("This morning at 8:01, heard:") and "cappuccino" in answer, answer


def test_a_question_asking_who_is_never_answered_by_the_reader_with_a_bare_name() -> None:
    # The sentence names Katrina, but nothing in words says she makes it: quoted, not "Katrina."
    answer, llm = _answer("Who is making breakfast?", "Katrina.")
    assert not llm.calls_for(READ_PURPOSE)
    assert answer.startswith("This morning at 8:00, heard:"), answer


@pytest.mark.parametrize(("reply", "shown"), [("At the office.", True), ("At the cafe.", False)])
def test_a_place_quoted_beside_the_sentence_supports_the_answer_and_nothing_else_does(reply: str, shown: bool) -> None:
    # GIVEN "Where's my laptop?" answered by the laptop sentence quoted with where I said I was before it
    memory = RetrievedMemory(
        id="w",
        memory_type=MemoryKind.EPISODIC,
        text="I heard: I am at the office on the third floor. Now I am opening my laptop.",
        score=1.0,
        source="test",
        start_time=datetime(2025, 3, 11, 8, 6, tzinfo=UTC),
        end_time=datetime(2025, 3, 11, 8, 6, 30, tzinfo=UTC),
        duration_seconds=30,
    )
    llm = ScriptedLLM().script(READ_PURPOSE, reply)
    services = Services(make_settings(), llm=llm)
    answer = compose_answer(services, "Where's my laptop?", [memory], NOW, partial(read_answer, services)).answer
    # THEN the reader's short answer is shown when the quoted place states it, never a place it invents
    assert answer.startswith(reply.rstrip(".")) is shown, answer
    assert '"I am at the office on the third floor. Now I am opening my laptop."' in answer


COFFEE = [
    RetrievedMemory(
        id=str(n),
        memory_type=MemoryKind.EPISODIC,
        text=f"I heard: {text}",
        score=1.0,
        source="test",
        start_time=datetime(2025, 3, 11, 8, n, tzinfo=UTC),
        end_time=datetime(2025, 3, 11, 8, n, 30, tzinfo=UTC),
        duration_seconds=30,
    )
    for n, text in enumerate(["I only drink one coffee a day.", "I pay for the coffee with my phone."])
]
QUESTION = "What about the coffee?"  # both sentences are candidates


def _reranked(first: float, second: float) -> tuple[str, str, str, ScriptedLLM]:
    """The composer's first and second sentences, and the answer when the model judges them `first`, `second`."""
    llm = ScriptedLLM()
    services = Services(make_settings(), llm=llm)
    one, two = (c.text for c in rank_sentences(services, QUESTION, COFFEE)[:2])
    llm.script(JUDGE_PURPOSE, lambda request: str(first if one in request.messages[-1]["content"] else second))
    answer = compose_answer(services, QUESTION, COFFEE, NOW, rerank=partial(rerank, services)).answer
    return one, two, answer, llm


def test_a_sentence_the_model_is_clearly_surer_answers_goes_first() -> None:
    # GIVEN a second sentence the model judges far likelier to answer than the composer's first
    one, two, answer, llm = _reranked(-3.0, 1.5)
    # THEN it is the answer, and the model was asked of both
    assert two in answer and one not in answer, answer
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 2


@pytest.mark.parametrize(("first", "second"), [(0.5, 1.2), (2.0, -1.0)])  # surer by less than the margin; of the first
def test_the_composers_order_stands_unless_the_model_is_clearly_surer(first: float, second: float) -> None:
    one, _, answer, _ = _reranked(first, second)
    assert one in answer, answer


def test_a_model_that_fails_to_judge_leaves_the_composers_order() -> None:
    llm = ScriptedLLM().script(JUDGE_PURPOSE, RuntimeError("model crashed"))
    services = Services(make_settings(), llm=llm)
    ranked = rank_sentences(services, QUESTION, COFFEE)
    assert len(ranked) == 2 and rerank(services, QUESTION, ranked) == ranked
