"""The answer composed from memories, with the shipped weights: the sentence quoted with when it was said and the
memory it comes from, a summary's sentence told as the window that said it, an answer in other words found by
meaning, and "I don't remember that." when nothing recorded answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.harness import make_settings
from tests.support.memory import SteeredEmbedder
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding import providers
from worldmm.retrieval import compose
from worldmm.retrieval.citations import describe_when
from worldmm.retrieval.compose import NO_MEMORY, Composed, Weights, compose_answer, score
from worldmm.retrieval.models import MemoryKind, RetrievedMemory
from worldmm.services import Services

pytestmark = pytest.mark.integration

NOW = datetime(2025, 3, 11, 12, 30, tzinfo=UTC)  # a Tuesday
START = datetime(2025, 3, 11, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("moment", "words"),
    [
        (datetime(2025, 3, 11, 8, 14, tzinfo=UTC), "this morning at 8:14"),
        (datetime(2025, 3, 11, 12, 5, tzinfo=UTC), "this afternoon at 12:05"),
        (datetime(2025, 3, 11, 19, 5, tzinfo=UTC), "this evening at 19:05"),
        (datetime(2025, 3, 10, 19, 42, tzinfo=UTC), "yesterday at 19:42"),
        (datetime(2025, 3, 3, 11, 15, tzinfo=UTC), "on Monday 3 March at 11:15"),
        (datetime(2024, 12, 30, 9, 0, tzinfo=UTC), "on Monday 30 December 2024 at 9:00"),
    ],
)
def test_describe_when_says_the_time_relative_to_the_question(moment: datetime, words: str) -> None:
    assert describe_when(moment, NOW) == words


def _windows(*texts: str, apart_s: int = 60) -> list[RetrievedMemory]:
    """30-second episodic windows from 8:00, one every `apart_s` seconds (30: each ends where the next starts)."""
    return [
        RetrievedMemory(
            id=f"w{n}",
            memory_type=MemoryKind.EPISODIC,
            text=text,
            score=1.0,
            source="test",
            start_time=START + timedelta(seconds=apart_s * n),
            end_time=START + timedelta(seconds=apart_s * n + 30),
            duration_seconds=30,
            segment_id=f"w{n}",
        )
        for n, text in enumerate(texts)
    ]


def _services() -> Services:
    return Services(make_settings(), llm=ScriptedLLM())


def test_the_answer_quotes_the_sentence_says_when_it_was_heard_and_cites_its_memory() -> None:
    # GIVEN a window whose caption says what was seen and what was heard, and a window of what was seen
    memories = _windows(
        "I am watering the plants by the window.",
        "At my desk in the office (heard: Me: I am putting my keys in the drawer of my desk.)",
    )
    composed = compose_answer(_services(), "Where are my keys?", memories, NOW)
    # THEN the heard sentence is quoted, without who said it when it was the wearer, with its minute and memory
    assert composed.answer == (
        'This morning at 8:01, heard: "I am putting my keys in the drawer of my desk." '
        "(from your 30-second episodic memory of 08:01:00–08:01:30)."
    )
    assert composed.memories == [memories[1]] and not composed.read
    # AND a sentence seen, not heard, is quoted without "heard"
    seen = compose_answer(_services(), "What am I watering?", memories, NOW)
    assert seen.answer.startswith('This morning at 8:00: "I am watering the plants by the window."'), seen.answer


@pytest.mark.parametrize(
    "question",
    [
        "What is my dog's name?",
        "Where is my passport?",
    ],
)
def test_nothing_that_shares_the_questions_words_is_not_remembered_and_cites_nothing(question: str) -> None:
    memories = _windows("I heard: It is cold and sunny today.", "I heard: I am at the office on the third floor.")
    assert compose_answer(_services(), question, memories, NOW) == Composed(NO_MEMORY, [])


def test_what_was_said_after_an_event_is_found_in_the_next_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN weights that count the words said around a sentence and refuse only below -1 (the step, not the fit)
    plain = Weights((3.0, 1.0, 0.0, 1.0, -1.0, 0.5, 0.0, 0.0, 0.5, 0.0), bias=-2.0, refuse_below=-1.0)
    monkeypatch.setattr(compose, "fitted_weights", lambda: plain)
    # AND leaving the cafe at the end of one window, and arriving at the office in the next, without a gap
    windows = _windows(
        "I heard: I think my notebook is on the table at the cafe.",
        "I heard: Time to go. I am leaving the cafe now.",
        "I heard: I am at the office on the third floor.",
        apart_s=30,
    )
    composed = compose_answer(_services(), "What did I do after leaving the cafe?", windows, NOW)
    # THEN the answer is what was said next, cited as the window that said it
    assert '"I am at the office on the third floor."' in composed.answer, composed.answer
    assert composed.memories == [windows[2]]


def _summary(text: str) -> RetrievedMemory:
    """A 3-minute summary from 8:00."""
    return RetrievedMemory(
        id="summary",
        memory_type=MemoryKind.EPISODIC,
        text=text,
        score=1.0,
        source="test",
        start_time=START,
        end_time=START + timedelta(minutes=3),
        duration_seconds=180,
    )


def test_a_sentence_of_a_summary_is_told_as_the_first_window_that_said_it() -> None:
    # GIVEN a summary retrieved first, and the windows it spans, two of which said its sentence
    summary = _summary("I am walking to the cafe. That is four dollars fifty for the coffee.")
    windows = _windows(
        "I am walking to the cafe.",
        "Hello. That is four dollars fifty for the coffee.",
        "That is four dollars fifty for the coffee.",
    )
    composed = compose_answer(_services(), "How much was the coffee?", [summary, *windows], NOW)
    # THEN the sentence is cited as the first window that said it, at that window's minute
    assert composed.memories == [windows[1]], composed.answer
    assert "at 8:01" in composed.answer and "30-second" in composed.answer, composed.answer


def test_a_summary_whose_sentence_no_window_holds_is_cited_itself() -> None:
    summary = _summary("That is four dollars fifty for the coffee.")
    composed = compose_answer(
        _services(), "How much was the coffee?", [summary, *_windows("I am walking to the cafe.")], NOW
    )
    assert composed.memories == [summary] and "3-minute summary" in composed.answer, composed.answer


@pytest.fixture(scope="module")
def minilm() -> Services:
    """Services with the real all-MiniLM-L6-v2 text embedder, loaded once for the module."""
    return Services(make_settings(embedding_provider="local", embedding_dim=384), llm=ScriptedLLM())


@pytest.mark.parametrize("said", [("It is cold and sunny today.",), ()])
def test_an_answer_in_other_words_is_found_by_meaning_and_only_when_one_was_said(
    minilm: Services, said: tuple[str, ...]
) -> None:
    # GIVEN a question whose answer, when there is one, shares none of its words, beside lines far from it
    others = ("I am putting my coffee mug in the sink.", "Marco will fix slide three this evening.")
    memories = _windows(*(f"I heard: {line}" for line in (*said, *others)))
    composed = compose_answer(minilm, "What was the weather like outside?", memories, NOW)
    # THEN the real embedder finds the line close in meaning; without it, nothing is remembered
    if said:
        assert '"It is cold and sunny today."' in composed.answer and composed.memories == memories[:1]
    else:
        assert composed == Composed(NO_MEMORY, [])


def test_of_sentences_sharing_the_same_words_the_one_closer_in_meaning_goes_first() -> None:
    # GIVEN two sentences that share only "notebook" with the question, the longer one further from it in meaning
    question = "What about the notebook?"
    plan = "I am sitting at the window table, writing my plan in my blue notebook."
    note = "Note to self: pick up the blue notebook from the cafe."

    def at(cosine: float, axis: int) -> list[float]:
        vector = [0.0] * 8
        vector[0], vector[axis] = cosine, (1 - cosine**2) ** 0.5
        return vector

    embedder = SteeredEmbedder(8, {question: at(1.0, 1), plan: at(0.2, 2), note: at(0.6, 3)})
    services = Services(make_settings(), llm=ScriptedLLM(), embedder=embedder)
    scored = score(services, question, _windows(f"I heard: {plan}", f"I heard: {note}"))
    # THEN the one closer in meaning goes first, not the one retrieved first
    assert [c.said for c in scored.candidates] == [note, plan]


class _CountingEmbedder:
    """Vectors from letter counts (close texts, close vectors); keeps every text it was asked to embed."""

    dim = 26

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.embedded += texts
        return [[float(t.casefold().count(c)) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts]


def test_questions_in_one_process_embed_each_sentence_once(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = _CountingEmbedder()
    monkeypatch.setattr(providers, "build_text_embedder", lambda settings: embedder)
    services = Services(make_settings(), llm=ScriptedLLM())  # the composition root's embedder
    windows = _windows("I heard: It is cold and sunny today.", "I heard: I am walking to the cafe on Maple Street.")
    first, second = "What was it like outside on my walk?", "Was it cold today?"
    assert score(services, first, windows).candidates and score(services, second, windows).candidates
    assert {first, second, "It is cold and sunny today."} <= set(embedder.embedded)
    assert len(embedder.embedded) == len(set(embedder.embedded))
