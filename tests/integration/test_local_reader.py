"""The local reader: its short answer is shown only when the sentence it rests on states every word of it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest

from tests.support.harness import make_settings
from worldmm.llm.local import LlamaCppLLM
from worldmm.llm.port import LLMRequest, LLMResponse
from worldmm.llm.scripted import ScriptedLLM, Truncated
from worldmm.retrieval import compose
from worldmm.retrieval.compose import Weights, compose_answer
from worldmm.retrieval.models import MemoryKind, RetrievedMemory
from worldmm.retrieval.reader import READ_PURPOSE, load_model, read_anew, read_answer
from worldmm.retrieval.sentences import candidates
from worldmm.services import Services

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _plain_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights that count shared words and the kind asked for, so that each test reads the reader's step,
    whatever the fitted weights."""
    weights = Weights(
        features=(3.0, 1.0, 0.0, 1.0, -1.0, 0.5, 0.0, 0.0, 0.5, 0.0),
        bias=-2.0, refuse_below=-1.0,
    )  # fmt: skip
    monkeypatch.setattr(compose, "fitted_weights", lambda: weights)


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


READING_CHARS = 300
"""About how much of a reading's prompt of these memories the model reads anew (characters, `read_anew`)."""


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


def test_a_bare_yes_is_no_answer_to_what_the_question_asks() -> None:
    # "yes please" is in the sentence, but "Yes." says nothing of what was ordered
    answer, _ = _answer("What do I order at the cafe?", "Yes.")
    assert answer.startswith("This morning at 8:01, heard:") and "cappuccino" in answer, answer


@pytest.mark.parametrize(("reply", "shown"), [("At the office.", True), ("At the cafe.", False)])
def test_the_sentence_a_quoted_one_leans_on_supports_the_answer_and_nothing_else_does(reply: str, shown: bool) -> None:
    # GIVEN "Where's my laptop?" answered by a sentence that leans on where I said I was before it
    memory = RetrievedMemory(
        id="w",
        memory_type=MemoryKind.EPISODIC,
        text="I heard: I am at the office on the third floor. That is where I open my laptop.",
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
    assert '"I am at the office on the third floor. That is where I open my laptop."' in answer


def _heard(*sentences: str) -> list[RetrievedMemory]:
    """One 30-second window a minute for each sentence heard, from 8:00."""
    return [
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
        for n, text in enumerate(sentences)
    ]


COFFEE = _heard("I only drink one coffee a day.", "I pay for the coffee with my phone.")
QUESTION = "What about the coffee?"  # both sentences are candidates


class _LoadsOnFirstUse(ScriptedLLM):
    """A reader's model that, as a GGUF does, takes `load_s` to load on its first call, and `first_call_s` more
    for the first call after it (the prompt's start read afresh, the weights paged in)."""

    def __init__(self, load_s: float, first_call_s: float = 0.0) -> None:
        super().__init__()
        self.load_s = load_s
        self.first_call_s = first_call_s
        self.loads = 0

    def load(self) -> None:
        if not self.loads:
            time.sleep(self.load_s)
            self.loads += 1

    def _first_call(self) -> None:
        self.load()
        if not self.calls:
            time.sleep(self.first_call_s)

    def complete(self, request: LLMRequest) -> LLMResponse:
        self._first_call()
        return super().complete(request)

    def yes_log_odds(self, request: LLMRequest) -> float:
        self._first_call()
        return super().yes_log_odds(request)


def test_loading_the_model_is_not_taken_for_how_long_a_reading_takes() -> None:
    # GIVEN a reader's model that takes 0.6 s to load and 0.5 s more for its first call, that no start-up loaded
    llm = _LoadsOnFirstUse(load_s=0.6, first_call_s=0.5)
    llm.script(READ_PURPOSE, "A large cappuccino.")
    services = Services(make_settings(), llm=llm)

    def answer(deadline_s: float) -> str:
        read = partial(read_answer, services, deadline=time.perf_counter() + deadline_s)
        return compose_answer(services, "What do I order at the cafe?", MEMORIES, NOW, read).answer

    # WHEN the first question loads it, with a minute to spare; THEN it reads
    assert answer(60).startswith("A large cappuccino") and llm.loads == 1
    # AND the next, with a second left, is read too: a reading is expected to take what reading took
    assert services.reader_call_times.expected(READ_PURPOSE, size=READING_CHARS) < 0.3
    assert answer(1.0).startswith("A large cappuccino")
    assert len(llm.calls_for(READ_PURPOSE)) == 2 + 2  # the load's warm-up and timed readings, then two answers


def test_a_server_loads_the_model_before_the_first_question() -> None:
    # GIVEN a reader's model that loads on first use, its first call slow, and one whose file is missing
    llm = _LoadsOnFirstUse(load_s=0.0, first_call_s=0.5)
    llm.script(READ_PURPOSE, "In the drawer.")
    services = Services(make_settings(), llm=llm)
    load_model(services)
    # THEN it is loaded, and after a first reading, untimed, one reading is timed: the first question's reading
    # is expected to take what it took, not half the answer's budget, nor the first call's time
    assert llm.loads == 1 and len(llm.calls_for(READ_PURPOSE)) == 2
    assert services.reader_call_times.expected(READ_PURPOSE) < 0.3
    broken = Services(make_settings(), llm=LlamaCppLLM(Path("/nonexistent/model.gguf")))
    # THEN one that cannot load is logged, not raised: the composer answers as before
    load_model(broken)
    # AND a model that does not load on first use (a remote one) is not called only to be timed
    remote = ScriptedLLM()
    load_model(Services(make_settings(), llm=remote))
    assert not remote.calls


def test_a_server_loads_the_question_models_before_the_first_question(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a process that has looked up no word's rarity yet and loaded no question analyser
    import wordfreq

    from worldmm.retrieval.asks import _nlp
    from worldmm.retrieval.reader import _load_question_models

    _nlp.cache_clear()
    _load_question_models.cache_clear()

    monkeypatch.setattr(wordfreq, "_wf_cache", {})
    before = wordfreq.get_frequency_dict.cache_info()
    # WHEN the server loads the question path's models (a remote reader's: nothing of the reader to load)
    load_model(Services(make_settings(), llm=ScriptedLLM()))
    # THEN wordfreq's English list was read then (or was already read), not in the first question's time
    after = wordfreq.get_frequency_dict.cache_info()
    assert after.hits + after.misses > before.hits + before.misses
    # AND the question analyser's spaCy pipeline is loaded then too
    assert _nlp.cache_info().currsize == 1


def test_no_answer_is_written_when_reading_would_end_after_the_deadline() -> None:
    # GIVEN a reading that lately took two seconds, and a deadline one second away
    llm = ScriptedLLM().script(READ_PURPOSE, "A large cappuccino.")
    services = Services(make_settings(), llm=llm)
    services.reader_call_times.record(READ_PURPOSE, 2.0, size=READING_CHARS)
    read = partial(read_answer, services, deadline=time.perf_counter() + 1.0)
    answer = compose_answer(services, "What do I order at the cafe?", MEMORIES, NOW, read).answer
    # THEN the model is not asked, and the composer's sentence is quoted
    assert not llm.calls_for(READ_PURPOSE)
    assert answer.startswith("This morning at 8:01, heard:") and "cappuccino" in answer, answer


def test_a_reading_that_runs_past_its_tokens_is_not_asked_again_nor_shown() -> None:
    # GIVEN a model whose reading runs on past the short answer's tokens
    llm = ScriptedLLM().script(READ_PURPOSE, Truncated("A large cappuccino, which I always order because"))
    services = Services(make_settings(), llm=llm)
    answer = compose_answer(services, "What do I order at the cafe?", MEMORIES, NOW, partial(read_answer, services))
    # THEN it was asked once, to stop at the end of its first line, and the composer's sentence is quoted
    [reading] = llm.calls_for(READ_PURPOSE)
    assert reading.stop == ("\n",) and not reading.grow_when_cut_off
    assert answer.answer.startswith("This morning at 8:01, heard:") and "cappuccino" in answer.answer, answer.answer


def test_readings_start_alike_so_the_models_cache_of_the_start_is_reused() -> None:
    # GIVEN two readings of two sentences for two questions
    llm = ScriptedLLM().script(READ_PURPOSE, "A large cappuccino.")
    services = Services(make_settings(), llm=llm)
    pool = candidates(MEMORIES)
    read_answer(services, "What do I order at the cafe?", pool[-1])
    read_answer(services, "Who is in the kitchen?", pool[0])
    # THEN their prompts share the instructions and worked examples: only the request after them is read anew
    first, second = (call.prompt_text for call in llm.calls_for(READ_PURPOSE))
    shared = first[: next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), len(first))]
    assert len(shared) > 0.5 * len(first) and len(first) - len(shared) < 2 * read_anew(llm.calls_for(READ_PURPOSE)[0])


def test_a_reading_of_a_longer_line_is_expected_to_take_longer() -> None:
    # GIVEN a reading of a short line that lately took two seconds
    llm = ScriptedLLM().script(READ_PURPOSE, "Breakfast.")
    services = Services(make_settings(), llm=llm)
    question = "What did Katrina and Emma say?"
    by_length = sorted(candidates(MEMORIES), key=lambda c: len(c.quote))
    short, long = by_length[0], by_length[-1]
    read_answer(services, question, short)
    short_chars = read_anew(llm.calls_for(READ_PURPOSE)[-1])
    read_answer(services, question, long)
    long_chars = read_anew(llm.calls_for(READ_PURPOSE)[-1])
    assert long_chars > 1.05 * short_chars
    services.reader_call_times.record(READ_PURPOSE, 2.0, size=short_chars)
    # WHEN the time left is between the two readings' expected times: the short line is read, the longer not
    left = (2.0 + 2.0 * long_chars / short_chars) / 2
    read_answer(services, question, short, deadline=time.perf_counter() + left)
    read_answer(services, question, long, deadline=time.perf_counter() + left)
    reads = llm.calls_for(READ_PURPOSE)
    assert len(reads) == 3 and read_anew(reads[-1]) == short_chars
