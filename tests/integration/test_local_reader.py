"""The local reader: its short answer is shown only when the sentence it rests on states every word of it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest

from tests.support.harness import make_settings
from tests.support.memory import SteeredEmbedder
from worldmm.llm.local import LlamaCppLLM
from worldmm.llm.port import LLMRequest, LLMResponse
from worldmm.llm.scripted import ScriptedLLM, Truncated
from worldmm.retrieval.compose import NO_MEMORY, compose_answer, rank_sentences
from worldmm.retrieval.models import MemoryKind, RetrievedMemory
from worldmm.retrieval.reader import (
    DOES_NOT_ANSWER,
    JUDGE_PURPOSE,
    READ_PURPOSE,
    RERANK_MARGIN,
    load_model,
    read_anew,
    read_answer,
    rerank,
)
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


JUDGEMENT_CHARS = READING_CHARS = 300
"""About how much of a judgement's or a reading's prompt of these memories the model reads anew (characters,
`read_anew`)."""


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


@pytest.mark.parametrize("first", [DOES_NOT_ANSWER - 0.2, DOES_NOT_ANSWER + 0.2])
def test_a_sentence_the_model_doubts_stays_while_another_is_not_clearly_better(first: float) -> None:
    # GIVEN a second sentence the model judges not to answer either, or to answer only slightly more likely
    one, _, answer, _ = _reranked(first, DOES_NOT_ANSWER + 0.3)
    # THEN the composer's first stands: one sentence's low score alone does not drop it
    assert one in answer, answer


def test_when_the_model_judges_that_no_sentence_answers_nothing_is_remembered() -> None:
    *_, answer, llm = _reranked(DOES_NOT_ANSWER - 0.1, DOES_NOT_ANSWER - 1.0)
    assert answer == NO_MEMORY, answer
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 2


def test_a_sentence_ranked_below_all_those_judged_not_to_answer_is_not_quoted_instead() -> None:
    # GIVEN four sentences about the coffee, and a model sure of each it judges that it does not answer
    llm = ScriptedLLM().script(JUDGE_PURPOSE, str(DOES_NOT_ANSWER - 1.0))
    services = Services(make_settings(), llm=llm)
    four = _heard(*(m.text.removeprefix("I heard: ") for m in COFFEE), "The coffee was hot.", "My coffee mug is blue.")
    assert len(rank_sentences(services, QUESTION, four)) == 4
    # THEN it judges the composer's best three, and the fourth is not quoted in their place
    answer = compose_answer(services, QUESTION, four, NOW, rerank=partial(rerank, services)).answer
    assert answer == NO_MEMORY and len(llm.calls_for(JUDGE_PURPOSE)) == 3, answer


@pytest.mark.parametrize(("odds", "answered"), [(DOES_NOT_ANSWER - 0.1, False), (DOES_NOT_ANSWER + 0.1, True)])
def test_a_lone_sentence_is_judged_too(odds: float, answered: bool) -> None:
    # GIVEN a question only one sentence shares a word with
    llm = ScriptedLLM().script(JUDGE_PURPOSE, str(odds))
    services = Services(make_settings(), llm=llm)
    assert len(rank_sentences(services, "How do I pay?", COFFEE)) == 1
    # THEN the model judges it, and it is the answer only unless the model is sure it does not answer
    composed = compose_answer(services, "How do I pay?", COFFEE, NOW, rerank=partial(rerank, services))
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 1
    assert ("phone" in composed.answer) is answered and composed.judged_unanswered is not answered, composed


def test_a_model_that_fails_to_judge_leaves_the_composers_order() -> None:
    llm = ScriptedLLM().script(JUDGE_PURPOSE, RuntimeError("model crashed"))
    services = Services(make_settings(), llm=llm)
    ranked = rank_sentences(services, QUESTION, COFFEE)
    assert len(ranked) == 2 and rerank(services, QUESTION, ranked, COFFEE) == ranked


WEATHER = "Cold and sunny today."
WALK = _heard("I am walking to the cafe.", "My walk takes ten minutes.", "I walk past the park.", WEATHER)


DOUBTED = DOES_NOT_ANSWER + 0.5
"""Log-odds of a sentence the model doubts, not sure that it does not answer."""


def _by_meaning(question: str, judged: dict[str, float]) -> tuple[str, ScriptedLLM]:
    """The answer to `question` over WALK when the embedder puts the weather sentence closest to it in meaning
    (cosine 0.45: too far for the composer to keep a sentence sharing no word) and the others at 0.35, and
    the model judges sentences as `judged` says."""

    def at(cosine: float, axis: int) -> list[float]:
        vector = [0.0] * 8
        vector[0], vector[axis] = cosine, (1 - cosine**2) ** 0.5
        return vector

    axes = {m.text.removeprefix("I heard: "): at(0.35, n) for n, m in enumerate(WALK, 1)}
    axes |= {question: at(1.0, 1), WEATHER: at(0.45, len(WALK))}
    llm = ScriptedLLM().script(
        JUDGE_PURPOSE,
        lambda request: str(next((v for k, v in judged.items() if k in request.messages[-1]["content"]), DOUBTED)),
    )
    services = Services(make_settings(), llm=llm, embedder=SteeredEmbedder(8, axes))
    return compose_answer(services, question, WALK, NOW, rerank=partial(rerank, services)).answer, llm


def test_a_sentence_close_in_meaning_that_shares_no_word_is_judged_and_can_answer() -> None:
    # GIVEN three sentences sharing "walk" and the answer in other words, too far in meaning for the composer
    question = "What was it like outside on my walk?"
    answer, llm = _by_meaning(question, {WEATHER: DOUBTED + RERANK_MARGIN + 0.5})
    # THEN the model judges the composer's three and the one closest in meaning, and that one answers
    assert WEATHER in answer, answer
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 4


def test_a_sentence_close_in_meaning_the_model_doubts_leaves_the_composers_first() -> None:
    answer, _ = _by_meaning("What was it like outside on my walk?", {})
    assert WEATHER not in answer and "walk" in answer, answer


def test_a_refusal_stands_whatever_is_close_in_meaning() -> None:
    # GIVEN a question nothing recorded answers, whose nearest sentence in meaning the model would take
    answer, llm = _by_meaning("What is my dog's name?", {WEATHER: 5.0})
    # THEN nothing is judged and nothing is answered
    assert answer == NO_MEMORY and not llm.calls_for(JUDGE_PURPOSE)


def test_judging_that_would_end_after_the_deadline_is_not_done_and_the_composers_order_stands() -> None:
    # GIVEN judgements that lately took a second each (a prompt of about a judgement's length)
    llm = ScriptedLLM().script(JUDGE_PURPOSE, lambda r: "3" if "phone" in r.messages[-1]["content"] else "-3")
    services = Services(make_settings(), llm=llm)
    services.reader_call_times.record(JUDGE_PURPOSE, 1.0, size=JUDGEMENT_CHARS)
    ranked = rank_sentences(services, QUESTION, COFFEE)
    # WHEN the answer's deadline is half a second away: no sentence is judged, the composer's order stands
    assert rerank(services, QUESTION, ranked, COFFEE, deadline=time.perf_counter() + 0.5) == ranked
    assert not llm.calls_for(JUDGE_PURPOSE)
    # WHEN it is a minute away: both are judged, and the one the model is surer of goes first
    reordered = rerank(services, QUESTION, ranked, COFFEE, deadline=time.perf_counter() + 60)
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 2 and "phone" in reordered[0].text


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


def test_loading_the_model_is_not_taken_for_how_long_a_judgement_takes() -> None:
    # GIVEN a reader's model that takes 0.6 s to load and 0.5 s more for its first call, that no start-up loaded
    llm = _LoadsOnFirstUse(load_s=0.6, first_call_s=0.5)
    llm.script(JUDGE_PURPOSE, "-1").script(READ_PURPOSE, "In the drawer.")
    services = Services(make_settings(), llm=llm)
    ranked = rank_sentences(services, QUESTION, COFFEE)
    # WHEN a question loads it, with a minute to spare: it is loaded, warmed and timed first, then judges
    rerank(services, QUESTION, ranked, COFFEE, deadline=time.perf_counter() + 60)
    assert llm.loads == 1 and len(llm.calls_for(JUDGE_PURPOSE)) == 2 + 2
    # THEN a judgement is expected to take what judging took, neither the load nor the first call
    assert services.reader_call_times.expected(JUDGE_PURPOSE, size=JUDGEMENT_CHARS) < 0.3
    # AND the next question, with half a second left, is still judged, and the model is not timed again
    rerank(services, QUESTION, ranked, COFFEE, deadline=time.perf_counter() + 0.5)
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 6 and len(llm.calls_for(READ_PURPOSE)) == 1


def test_loading_the_model_is_not_taken_for_how_long_a_reading_takes() -> None:
    # GIVEN a reader's model that takes 0.6 s to load and 0.5 s more for its first call, that no start-up loaded
    llm = _LoadsOnFirstUse(load_s=0.6, first_call_s=0.5)
    llm.script(JUDGE_PURPOSE, "1").script(READ_PURPOSE, "A large cappuccino.")
    services = Services(make_settings(), llm=llm)

    def answer(deadline_s: float) -> str:
        read = partial(read_answer, services, deadline=time.perf_counter() + deadline_s)
        return compose_answer(services, "What do I order at the cafe?", MEMORIES, NOW, read).answer

    # WHEN the first question loads it, with a minute to spare; THEN it reads
    assert answer(60).startswith("A large cappuccino") and llm.loads == 1
    # AND the next, with a second left, is read too: a reading is expected to take what reading took
    assert services.reader_call_times.expected(READ_PURPOSE, size=READING_CHARS) < 0.3
    assert answer(1.0).startswith("A large cappuccino")
    assert len(llm.calls_for(READ_PURPOSE)) == 1 + 2 and len(llm.calls_for(JUDGE_PURPOSE)) == 2


def test_a_server_loads_the_model_before_the_first_question() -> None:
    # GIVEN a reader's model that loads on first use, its first call slow, and one whose file is missing
    llm = _LoadsOnFirstUse(load_s=0.0, first_call_s=0.5)
    llm.script(JUDGE_PURPOSE, "1").script(READ_PURPOSE, "In the drawer.")
    services = Services(make_settings(), llm=llm)
    load_model(services)
    # THEN it is loaded, and after a first judgement, untimed, one judgement and one reading are timed: the
    # first question's calls are expected to take what they took, not half the answer's budget, nor the first
    assert llm.loads == 1 and (len(llm.calls_for(JUDGE_PURPOSE)), len(llm.calls_for(READ_PURPOSE))) == (2, 1)
    assert all(services.reader_call_times.expected(p) < 0.3 for p in (JUDGE_PURPOSE, READ_PURPOSE))
    broken = Services(make_settings(), llm=LlamaCppLLM(Path("/nonexistent/model.gguf")))
    # THEN one that cannot load is logged, not raised: the composer answers as before
    load_model(broken)
    # AND a model that does not load on first use (a remote one) is not called only to be timed
    remote = ScriptedLLM()
    load_model(Services(make_settings(), llm=remote))
    assert not remote.calls


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


def test_a_reading_starts_as_the_judgement_of_its_sentence_did() -> None:
    # GIVEN the composer's best sentence for a question, judged and then read
    llm = ScriptedLLM().script(READ_PURPOSE, "A large cappuccino.").script(JUDGE_PURPOSE, "3")
    services = Services(make_settings(), llm=llm)
    question = "What do I order at the cafe?"
    best = rank_sentences(services, question, MEMORIES)[0]
    rerank(services, question, [best], MEMORIES)
    written = read_answer(services, question, best)
    assert written is not None and written.support is best
    # THEN the reading's prompt repeats the judgement's up to the end of the sentence: the model's cache of it
    # is reused, and only the request after it is read anew
    [judged] = [c.prompt_text for c in llm.calls_for(JUDGE_PURPOSE) if best.text in c.prompt_text]
    read = llm.calls_for(READ_PURPOSE)[-1].prompt_text
    shared = read[: read.index(best.text) + len(best.text)]
    assert judged.startswith(shared) and len(shared) > 0.5 * len(read)


def test_a_reading_of_a_longer_line_is_expected_to_take_longer() -> None:
    # GIVEN a reading of a short line that lately took two seconds
    llm = ScriptedLLM().script(READ_PURPOSE, "Breakfast.")
    services = Services(make_settings(), llm=llm)
    question = "What did Katrina and Emma say?"
    short, long = sorted(rank_sentences(services, question, MEMORIES)[:2], key=lambda c: len(c.quote))
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


def test_no_answer_is_written_when_a_judgement_of_the_same_answer_did_not_fit_its_deadline() -> None:
    # GIVEN readings that lately took no time, and a judgement of this answer that the deadline left unmade
    llm = ScriptedLLM().script(READ_PURPOSE, "A large cappuccino.")
    services = Services(make_settings(), llm=llm)
    skipped = ["judging 2 of 3 sentences"]
    read = partial(read_answer, services, deadline=time.perf_counter() + 60, skipped=skipped)
    answer = compose_answer(services, "What do I order at the cafe?", MEMORIES, NOW, read).answer
    # THEN the host is slower than the readings say: the model is not asked, and the composer's sentence stands
    assert not llm.calls_for(READ_PURPOSE) and skipped[-1] == "writing a short answer"
    assert answer.startswith("This morning at 8:01, heard:") and "cappuccino" in answer, answer
