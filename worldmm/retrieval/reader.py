"""The local reader: a small model writes a short answer from the best memory line, and the answer is shown
only when one sentence of that line supports every word it states; that line is the one cited.

Beside a model that cannot follow the agent's actions, the composer chooses the memory sentences that answer
best (`compose.rank_sentences`); the reader's model judges them (`rerank`), then answers from the best in a
few words. A small model invents readily, so its answer is checked before it is shown: every content word of
it (names, numbers, times, places — every stemmed lexeme the text index would keep) must be in one sentence of
the line read or — for a common word, not a name or a number — in the question, and it must state something
the question does not. An answer that fails is dropped for the composer's quoted sentence; the reader never
turns "nothing relevant" into an answer.

Before it writes, the reader's model may reorder the composer's best sentences (`rerank`): asked of each,
and of the statements closest to the question in meaning (which may share no word with it), whether it
answers the question, a sentence it is clearly surer of than of the composer's first goes first; when it
judged all it was to judge and is sure that none answers, the answer is "I don't remember that." rather than a
quote that only shares the question's words. The composer's refusals stand: a
question it finds nothing relevant for is never reranked into an answer.

A reading starts as the judgement of its sentence did (the same instructions, question and sentence), so the
model's cache of the question is reused and only the sentence and the request are read anew: on a 2-core host a
reading takes about a judgement's time (0.7-2.0 s), where four lines read afresh took 2-3 s.

Both keep to the answer's deadline: a model call that the recent ones say would end after it is not made (the
composer's order and its quoted sentence stand), so a slow CPU gets fewer written answers, not slow ones.
Judging goes first: a better choice of sentence is worth more than a shorter wording of it (measured:
reserving the reading's time cost 6 right answers of 120, 2026-11-29).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from aws_lambda_powertools import Logger

from worldmm.llm.port import LLMRequest, LoadsOnFirstUse, YesNoJudge
from worldmm.llm.prompts import render_prompt
from worldmm.retrieval.compose import Candidate, ReadAnswer, closest_in_meaning, judged_quote, text_lexemes
from worldmm.retrieval.sanitize import sanitize_memory_text

if TYPE_CHECKING:
    from worldmm.retrieval.models import RetrievedMemory
    from worldmm.retrieval.port import ReaderPorts

logger = Logger(child=True)
_T = TypeVar("_T")

READ_PURPOSE = "read_answer"
JUDGE_PURPOSE = "judge_sentence"
SENTENCE_SYSTEM = "heard_sentence_system"
"""The instructions a judgement and a reading of a heard sentence both start with."""
RERANK_CANDIDATES = 3
"""How many of the composer's best sentences the model judges."""
RERANK_CLOSEST = 3
"""How many statements closest to the question in meaning (`compose.closest_in_meaning`) it judges beside them."""
RERANK_MARGIN = 1.0
"""How much surer (log-odds of "yes") the model must be of a sentence than of the composer's first to put it
first: a smaller margin follows the model's noise (measured on the sample's question sets, 2026-11-27)."""
DOES_NOT_ANSWER = -2.75
"""Log-odds of "yes" below which the model is sure a sentence does not answer. Only all of them together
refuse: over 235 seen questions of the sample (2026-11-29), every answer whose best judged sentence scored
below -2.6 was wrong (17, 5 of them to questions nothing recorded answers), the lowest right one -2.60; but
dropping single sentences by it lost 4 right answers of 151 (a right first sentence scored -2.84; the
scores move by ~0.1 from run to run)."""
READER_MAX_TOKENS = 16
"""A short answer's tokens ("Four dollars fifty." is 5): a reading cut off here is dropped, not asked again (32
let a first reading run on for 4 s, and the retry with twice the room made one answer take 12.9 s, 2026-12-04;
held out 23 and 24 with the reader: 30/60 right and 20 written either way)."""
MAX_ANSWER_CHARS = 120
_PREAMBLE = re.compile(
    r"^\s*(?:the\s+)?(?:short\s+)?answer(?:\s+to\s+(?:the|your)\s+question)?\s*(?:is)?\s*[:\-]\s*", re.I
)
_NAMED = re.compile(r"\b(?:[A-Z][\w'-]*|\w*\d[\w.:]*)")
"""Names, places and numbers: capitalised words and anything with a digit."""
_UNKNOWN = re.compile(r"\b(?:unknown|not sure|don't know|do not know|no line|cannot|can't|sorry)\b", re.I)


def _clean(reply: str) -> str:
    first = next((line.strip() for line in reply.splitlines() if line.strip()), "")
    first = _PREAMBLE.sub("", first).strip().strip('"').strip()
    return first[:MAX_ANSWER_CHARS]


def read_answer(
    services: ReaderPorts,
    question: str,
    line: Candidate,
    deadline: float | None = None,
    skipped: list[str] | None = None,
) -> ReadAnswer | None:
    """The model's short answer to `question` from `line` (the best, after judging), or None when it fails the
    check or would not be written by `deadline` (`time.perf_counter`; then `skipped` is told), or when `skipped`
    already holds a call of this answer that the deadline left unmade."""
    limit = services.settings.memory_text_max_chars
    request = _read_request(services, question, sanitize_memory_text(judged_quote(question, line), limit))
    try:
        # A judgement that did not fit this answer's deadline is shorter than a reading: the host is slower now
        # than the recent readings say (a busy CPU), so the reading is not made either.
        if skipped or not _ready(services, request, deadline):
            logger.info("reader skipped: past the answer's deadline")
            if skipped is not None:
                skipped.append("writing a short answer")
            return None
        reply = _timed(services, request, services.reader_llm.complete)
    except Exception as exc:  # the composed answer stands; the log says why
        logger.warning("reader unavailable: %s", type(exc).__name__)
        return None
    if reply.truncated:  # a line that runs past the short answer's tokens is no short answer
        logger.info("reader answer cut off", extra={"max_tokens": request.max_tokens})
        return None
    answer = _clean(reply.text)
    if not answer or _UNKNOWN.search(answer):
        return None
    said = _sentences(line)
    named = " ".join(_NAMED.findall(answer))
    stated, names, asked, *lexemes = text_lexemes(services, [answer, named, question, *said])
    if not stated - asked:
        return None  # says nothing the question does not
    # One sentence states it all: names and numbers from it alone, other words from it or the question.
    if any(names <= support and stated <= support | asked for support in lexemes):
        return ReadAnswer(answer.rstrip("."), line)
    logger.info("reader answer unsupported", extra={"unsupported": sorted(stated - asked)})
    return None


def _sentences(line: Candidate) -> list[str]:
    """The line's sentence, and those quoted with it (the one it leans on or opens, the context it was chosen
    with)."""
    beside = (line.previous, line.following, line.before, line.after)
    return [line.said, *(t for t in beside if t and t != line.said and t in line.quote)]


def rerank(
    services: ReaderPorts,
    question: str,
    ranked: list[Candidate],
    memories: list[RetrievedMemory],
    deadline: float | None = None,
    skipped: list[str] | None = None,
) -> list[Candidate]:
    """`ranked` with the sentence the reader's model judges to answer `question` clearly best first (by at
    least `RERANK_MARGIN` over the composer's first); empty when it judged every sentence it was to judge
    and is sure none answers (log-odds below `DOES_NOT_ANSWER`: the composer's lower ones are not quoted
    instead); unchanged when the model cannot judge or is not sure.

    Judged, in turn while a judgement is expected to end by `deadline`: the composer's `RERANK_CANDIDATES`
    best and the `RERANK_CLOSEST` statements of `memories` closest to the question in meaning, which may
    share no word with it. What the deadline leaves unjudged is told to `skipped` and stays."""
    judge = services.reader_llm
    if not ranked or not isinstance(judge, YesNoJudge):
        return ranked
    head = ranked[:RERANK_CANDIDATES]
    quotes = {c.quote for c in head}
    head += [c for c in closest_in_meaning(services, question, memories, RERANK_CLOSEST) if c.quote not in quotes]
    limit = services.settings.memory_text_max_chars
    odds: list[float] = []
    try:
        for candidate in head:
            request = _judge_request(services, question, sanitize_memory_text(judged_quote(question, candidate), limit))
            if not _ready(services, request, deadline):
                logger.info("judged %d of %d: past the answer's deadline", len(odds), len(head))
                if skipped is not None:
                    skipped.append(f"judging {len(head) - len(odds)} of {len(head)} sentences")
                break
            odds.append(_timed(services, request, judge.yes_log_odds))
    except Exception as exc:  # the composer's order stands; the log says why
        logger.warning("reader cannot judge: %s", type(exc).__name__)
        return ranked
    if len(odds) == len(head) and max(odds) < DOES_NOT_ANSWER:
        logger.info("judged that no sentence answers", extra={"judged": len(odds), "best": round(max(odds), 2)})
        return []
    if len(odds) < 2:
        return ranked
    best = max(range(len(odds)), key=lambda i: (odds[i], -i))
    if odds[best] - odds[0] < RERANK_MARGIN:
        return ranked
    chosen = head[best]
    logger.info(
        "reranked",
        extra={
            "from": f"rank {best + 1}" if best < RERANK_CANDIDATES else "closest in meaning",
            "log_odds": round(odds[best], 2),
            "first": round(odds[0], 2),
        },
    )
    return [chosen, *(c for c in ranked if c.quote != chosen.quote)]


_TIMING_QUESTION = "Where did I leave my keys?"
_WARM_UP_LINE = "My keys are on the hallway shelf."
_TIMING_LINE = "I am putting my keys in the drawer of my desk."


def load_model(services: ReaderPorts) -> None:
    """Load the reader's model ahead of the first question (a server's start-up), and time one judgement and
    one reading of a made-up line, so that the first questions are judged and read as far as this host's
    speed allows (a kind of call never timed would be expected to take half the answer's budget, and a kind
    that never fits is never timed); a model that cannot be loaded is logged, and answers are the composer's.
    A model that does not load here (a remote one) is not called only to be timed.

    The first call after loading is made untimed: it reads the prompts' shared start afresh and pages the
    weights in (1.5-2.2 s where a judgement then takes 0.6-0.9 s, measured on 2 cores), and as a kind's only
    recent call it would keep later ones out (a whole set of questions judged nothing on 2026-12-03)."""
    try:
        model = services.reader_llm
        if not isinstance(model, LoadsOnFirstUse):
            return
        model.load()
        if isinstance(model, YesNoJudge):
            model.yes_log_odds(_judge_request(services, _TIMING_QUESTION, _WARM_UP_LINE))
            _timed(services, _judge_request(services, _TIMING_QUESTION, _TIMING_LINE), model.yes_log_odds)
        else:
            model.complete(_read_request(services, _TIMING_QUESTION, _WARM_UP_LINE))
        _timed(services, _read_request(services, _TIMING_QUESTION, _TIMING_LINE), model.complete)
    except Exception as exc:  # the first question tries again; the composer answers meanwhile
        logger.warning("reader model not loaded: %s", type(exc).__name__)


def _load(services: ReaderPorts) -> None:
    """Load the reader's model now when it loads on first use (raises when it cannot be loaded)."""
    model = services.reader_llm
    if isinstance(model, LoadsOnFirstUse):
        model.load()


def _ready(services: ReaderPorts, request: LLMRequest, deadline: float | None) -> bool:
    """Whether `request` is expected to be answered by `deadline`, sized by its prompt's characters (a longer
    prompt takes longer to read; `CallTimes.expected`). A model that loads on
    first use is loaded first, untimed: its load taken for a call's time would keep every later call of that
    kind from fitting (a server's first question would leave the reader unused for ten minutes)."""
    _load(services)
    return services.reader_call_times.fits(request.purpose, deadline, len(request.prompt_text))


def _timed(services: ReaderPorts, request: LLMRequest, call: Callable[[LLMRequest], _T]) -> _T:
    """`call(request)`, its time recorded against the request's purpose and prompt size."""
    started = time.perf_counter()
    try:
        return call(request)
    finally:
        services.reader_call_times.record(request.purpose, time.perf_counter() - started, len(request.prompt_text))


def _read_request(services: ReaderPorts, question: str, sentence: str) -> LLMRequest:
    """The reading of `sentence`: it starts as its judgement did, so the model's cache of that is reused. It ends
    at the first line (only that is shown), and one cut off at `READER_MAX_TOKENS` is not asked again."""
    request = _about_sentence(services, READ_PURPOSE, question, sentence, max_tokens=READER_MAX_TOKENS)
    return replace(request, stop=("\n",), grow_when_cut_off=False)


def _judge_request(services: ReaderPorts, question: str, sentence: str) -> LLMRequest:
    return _about_sentence(services, JUDGE_PURPOSE, question, sentence, max_tokens=1)


def _about_sentence(services: ReaderPorts, purpose: str, question: str, sentence: str, max_tokens: int) -> LLMRequest:
    return LLMRequest(
        purpose=purpose,
        messages=[
            {"role": "system", "content": render_prompt(SENTENCE_SYSTEM)},
            {"role": "user", "content": render_prompt(purpose, question=question, sentence=sentence)},
        ],
        model=services.settings.agent_model,
        max_tokens=max_tokens,
        temperature=0.0,
    )
