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
from worldmm.retrieval.compose import JUDGED, NO_MEMORY, Composed, Weights, compose_answer, score
from worldmm.retrieval.models import MemoryKind, RetrievedMemory
from worldmm.retrieval.reader import JUDGE_PURPOSE, READ_PURPOSE, judge, load_model, read_anew, read_answer
from worldmm.retrieval.sentences import candidates
from worldmm.services import Services

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _plain_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights that count shared words, the kind asked for and the judge's log-odds as they are (centred on 0),
    so that each test reads the reader's step, whatever the fitted weights."""
    weights = Weights(
        features=(3.0, 1.0, 0.0, 1.0, -1.0, 0.5, 0.0, 0.0, 0.5, 0.0),
        bias=-2.0, judge=1.0, judge_centre=0.0, refuse_below_judged=-1.0, refuse_below_unjudged=-1.0,
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


def _judged(
    odds: dict[str, float], memories: list[RetrievedMemory] = COFFEE
) -> tuple[list[str], Composed, ScriptedLLM]:
    """The sentences in the order of their first score, and the answer when the model judges each sentence as
    `odds` says (by a word of it)."""
    llm = ScriptedLLM()
    services = Services(make_settings(), llm=llm)
    first = [c.text for c in score(services, QUESTION, memories).candidates]
    llm.script(
        JUDGE_PURPOSE, lambda request: str(next(v for k, v in odds.items() if k in request.messages[-1]["content"]))
    )
    return first, compose_answer(services, QUESTION, memories, NOW, judge=partial(judge, services)), llm


def test_the_judges_log_odds_move_the_sentence_it_is_surer_of_first() -> None:
    # GIVEN the second sentence by the first score, which the model judges far likelier to answer
    first, composed, llm = _judged({"one coffee": -3.0, "phone": 3.0})
    assert first == ["I only drink one coffee a day.", "I pay for the coffee with my phone."]
    # THEN it is the answer, and the model was asked of both
    assert "phone" in composed.answer and composed.judged, composed.answer
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 2


def test_when_the_model_is_sure_no_sentence_answers_nothing_is_remembered() -> None:
    _, composed, llm = _judged({"coffee": -8.0})
    assert composed.answer == NO_MEMORY and composed.judged_unanswered and not composed.memories
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 2


FIVE = _heard(
    *(m.text.removeprefix("I heard: ") for m in COFFEE),
    "The coffee was hot.",
    "My coffee mug is blue.",
    "The coffee machine is broken.",
)


def test_only_the_best_sentences_by_the_first_score_are_judged() -> None:
    _, composed, llm = _judged({"coffee": 1.0}, FIVE)
    assert len(llm.calls_for(JUDGE_PURPOSE)) == JUDGED == 4 and composed.judged


def test_a_sentence_below_all_those_judged_not_to_answer_is_not_quoted_instead() -> None:
    # GIVEN five sentences about the coffee, and a model sure of each it judges that it does not answer
    _, composed, llm = _judged({"coffee": -8.0}, FIVE)
    # THEN the fifth, which it did not judge, is not quoted in their place
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 4
    assert composed.answer == NO_MEMORY and composed.judged_unanswered, composed.answer


def test_a_model_that_fails_to_judge_leaves_the_first_scores_order() -> None:
    llm = ScriptedLLM().script(JUDGE_PURPOSE, RuntimeError("model crashed"))
    services = Services(make_settings(), llm=llm)
    pool = score(services, QUESTION, COFFEE).candidates
    assert judge(services, QUESTION, pool) == [None, None]
    composed = compose_answer(services, QUESTION, COFFEE, NOW, judge=partial(judge, services))
    assert f'"{pool[0].text}"' in composed.answer and not composed.judged, composed.answer


def test_a_model_that_cannot_judge_is_not_asked() -> None:
    # GIVEN a reader's model with no log-odds of "yes" (only completions)
    asked: list[LLMRequest] = []

    class _Completes:
        def complete(self, request: LLMRequest) -> LLMResponse:
            asked.append(request)
            raise RuntimeError("a completion is no judgement")

    services = Services(make_settings(), llm=ScriptedLLM(), reader_llm=_Completes())  # type: ignore[arg-type]
    pool = score(services, QUESTION, COFFEE).candidates
    # THEN no sentence is judged, and the model is not asked
    assert judge(services, QUESTION, pool) == [None, None] and not asked


def test_judging_that_would_end_after_the_deadline_is_not_done_and_skipped_says_so() -> None:
    # GIVEN judgements that lately took a second each (a prompt of about a judgement's length)
    llm = ScriptedLLM().script(JUDGE_PURPOSE, lambda r: "3" if "phone" in r.messages[-1]["content"] else "-3")
    services = Services(make_settings(), llm=llm)
    services.reader_call_times.record(JUDGE_PURPOSE, 1.0, size=JUDGEMENT_CHARS)
    pool = score(services, QUESTION, COFFEE).candidates
    # WHEN the answer's deadline is half a second away: no sentence is judged, and `skipped` says so
    skipped: list[str] = []
    assert judge(services, QUESTION, pool, deadline=time.perf_counter() + 0.5, skipped=skipped) == [None, None]
    assert not llm.calls_for(JUDGE_PURPOSE) and skipped == ["judging 2 of 2 sentences"]
    # AND the answer is the first score's, not judged
    late = partial(judge, services, deadline=time.perf_counter() + 0.5)
    composed = compose_answer(services, QUESTION, COFFEE, NOW, judge=late)
    assert f'"{pool[0].text}"' in composed.answer and not composed.judged, composed.answer
    # WHEN it is a minute away: both are judged, each listed with its log-odds, and the surer one goes first
    judged: list[tuple[str, float]] = []
    in_time = partial(judge, services, deadline=time.perf_counter() + 60, skipped=skipped, judged=judged)
    composed = compose_answer(services, QUESTION, COFFEE, NOW, judge=in_time)
    assert len(llm.calls_for(JUDGE_PURPOSE)) == 2 and len(skipped) == 1
    assert sorted(judged) == sorted([(c.quote, -3.0 if "phone" not in c.text else 3.0) for c in pool])
    assert "phone" in composed.answer and composed.judged, composed.answer


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
    pool = score(services, QUESTION, COFFEE).candidates
    # WHEN a question loads it, with a minute to spare: it is loaded, warmed and timed first, then judges
    judge(services, QUESTION, pool, deadline=time.perf_counter() + 60)
    assert llm.loads == 1 and len(llm.calls_for(JUDGE_PURPOSE)) == 2 + 2
    # THEN a judgement is expected to take what judging took, neither the load nor the first call
    assert services.reader_call_times.expected(JUDGE_PURPOSE, size=JUDGEMENT_CHARS) < 0.3
    # AND the next question, with half a second left, is still judged, and the model is not timed again
    judge(services, QUESTION, pool, deadline=time.perf_counter() + 0.5)
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
    best = score(services, question, MEMORIES).candidates[0]
    assert judge(services, question, [best]) == [3.0]
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
