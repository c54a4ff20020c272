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

Every judgement and every reading is asked after the same instructions and worked judgements
(`JUDGE_EXAMPLES`, as earlier turns of the conversation): all of them start alike, so the model's cache of that
start is reused and only the question, the sentence and the request are read anew (a judgement after a reading
that started otherwise read the examples again: 3.0 s against 0.6 s, measured on 2 cores).

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
from functools import cache
from typing import TYPE_CHECKING, TypeVar
from weakref import WeakSet

from aws_lambda_powertools import Logger

from worldmm.llm.port import LLMRequest, LoadsOnFirstUse, YesNoJudge
from worldmm.llm.prompts import load_prompt, render_prompt
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
JUDGE_EXAMPLES = "judge_sentence_examples"
"""Worked judgements (two yes, two no; none about the sample recordings) the model is shown before each one it
makes. Without them it said no to plain answers ("Where did I leave my keys?" / "I am putting my keys in the
drawer of my desk.": -2.98), 27 of 103 sentences that answer scored below -2.5 (2026-12-05, 110 seen questions),
and sentences that answer and those that do not were told apart less well (AUC 0.75 against 0.79 with them;
within one question 0.78 against 0.82)."""
RERANK_CANDIDATES = 3
"""How many of the composer's best sentences the model judges."""
RERANK_CLOSEST = 3
"""How many statements closest to the question in meaning (`compose.closest_in_meaning`) it judges beside them."""
RERANK_MARGIN = 1.5
"""How much surer (log-odds of "yes") the model must be of a sentence than of the composer's first to put it
first. Over the judged sentences of 215 seen questions of both sample recordings (2026-12-05, with
`JUDGE_EXAMPLES`), putting the surest first whenever it led by 1.0 made 9 wrong answers right and 6 right ones
wrong; by 1.5, 6 and 3; by 2.0, 4 and 2 (`bench.bench_judge`, 97 questions: 1.0, 5 and 1; 1.5, 4 and 1).
Over whole answers 1.0 and 1.5 measured alike (2026-12-05, one stored memory each: EgoLife `--sample 100`
answer cites 0.150 and 0.120, but a second run at 1.0 gave 0.120; the evening's 98 seen questions 49 and 50;
the next morning's 36 seen once 23 and 22), and at 1.0 the demo's committed questions fell to 18 of 20: "Where
is my blue notebook now?" put "I am sitting at the window table, writing my plan for today in my loop
notebook." (2.37) over "Note to help pick up the loop notebook at the cafe at lunch." (1.10)."""
DOES_NOT_ANSWER = -0.5
"""Log-odds of "yes" below which the model is sure a sentence does not answer. Only all of them together
refuse. Over the same 215 questions (2026-12-05, with `JUDGE_EXAMPLES`): below -0.5 for every sentence judged
were 4 of the 16 questions nothing recorded answers and none of the 95 that a judged sentence answered (below
0: 1 of those; 0.5: 6). With the examples a sentence that answers scores a median 2.0, one that does not 0.5;
without them -1.7 and -2.8, and the old threshold (-2.75) refused about 6 of 58 answerable questions."""
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
    judged: list[tuple[str, float]] | None = None,
) -> list[Candidate]:
    """`ranked` with the sentence the reader's model judges to answer `question` clearly best first (by at
    least `RERANK_MARGIN` over the composer's first); empty when it judged every sentence it was to judge
    and is sure none answers (log-odds below `DOES_NOT_ANSWER`: the composer's lower ones are not quoted
    instead); unchanged when the model cannot judge or is not sure.

    Judged, in turn while a judgement is expected to end by `deadline`: the composer's `RERANK_CANDIDATES`
    best and the `RERANK_CLOSEST` statements of `memories` closest to the question in meaning, which may
    share no word with it. What the deadline leaves unjudged is told to `skipped` and stays; each sentence
    judged, as the model read it, and its log-odds, to `judged`."""
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
            sentence = sanitize_memory_text(judged_quote(question, candidate), limit)
            request = _judge_request(services, question, sentence)
            if not _ready(services, request, deadline):
                logger.info("judged %d of %d: past the answer's deadline", len(odds), len(head))
                if skipped is not None:
                    skipped.append(f"judging {len(head) - len(odds)} of {len(head)} sentences")
                break
            odds.append(_timed(services, request, judge.yes_log_odds))
            if judged is not None:
                judged.append((sentence, odds[-1]))
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
    A model that does not load here (a remote one) is not called only to be timed. Done once per model: a
    question that finds it not done yet (no start-up loaded it) does it first (`_ready`).

    The first call after loading is made untimed: it reads the prompts' shared start afresh and pages the
    weights in (1.5-4.2 s where a judgement then takes 0.6-0.9 s, measured on 2 cores), and as a kind's only
    recent call it would keep later ones out (a whole set of questions judged nothing on 2026-12-03; 25 of the
    first 30 EgoLife questions on 2026-12-05, whose evaluation loaded the model on its first question)."""
    model = services.reader_llm
    if not isinstance(model, LoadsOnFirstUse) or model in _LOADED:
        return
    try:
        model.load()
        _LOADED.add(model)  # loaded: a call that fails below fails as a question's would, not loaded again
        if isinstance(model, YesNoJudge):
            model.yes_log_odds(_judge_request(services, _TIMING_QUESTION, _WARM_UP_LINE))
            _timed(services, _judge_request(services, _TIMING_QUESTION, _TIMING_LINE), model.yes_log_odds)
        else:
            model.complete(_read_request(services, _TIMING_QUESTION, _WARM_UP_LINE))
        _timed(services, _read_request(services, _TIMING_QUESTION, _TIMING_LINE), model.complete)
    except Exception as exc:  # the first question tries again; the composer answers meanwhile
        logger.warning("reader model not loaded: %s", type(exc).__name__)


_LOADED: WeakSet[LoadsOnFirstUse] = WeakSet()
"""The reader's models `load_model` loaded, warmed and timed."""


def _ready(services: ReaderPorts, request: LLMRequest, deadline: float | None) -> bool:
    """Whether `request` is expected to be answered by `deadline`, sized by what the model reads anew
    (`read_anew`; `CallTimes.expected`). A model that loads on first use is loaded, warmed and timed first
    (`load_model`): its load, or its first call's reading of the shared start, taken for a call's time would
    keep every later call of that kind from fitting."""
    load_model(services)
    return services.reader_call_times.fits(request.purpose, deadline, read_anew(request))


def _timed(services: ReaderPorts, request: LLMRequest, call: Callable[[LLMRequest], _T]) -> _T:
    """`call(request)`, its time recorded against the request's purpose and `read_anew` size."""
    started = time.perf_counter()
    try:
        return call(request)
    finally:
        services.reader_call_times.record(request.purpose, time.perf_counter() - started, read_anew(request))


def read_anew(request: LLMRequest) -> int:
    """The characters of a judgement or reading past the start every one shares (`_shared_start`, ~700
    characters the model's cache holds): what its time grows with. Sized by the whole prompt, a judgement
    of a 550-character EgoLife caption was expected to take 1.5 times one of 150 characters and took 6 times
    as long (3.5 s against 0.6 s; 2026-12-05, 2 cores), and overran its answer's deadline."""
    return sum(len(str(message.get("content", ""))) for message in request.messages[len(_shared_start()) :])


def _read_request(services: ReaderPorts, question: str, sentence: str) -> LLMRequest:
    """The reading of `sentence`. It ends at the first line (only that is shown), and one cut off at
    `READER_MAX_TOKENS` is not asked again."""
    request = _asking(services, READ_PURPOSE, reading_messages(question, sentence), max_tokens=READER_MAX_TOKENS)
    return replace(request, stop=("\n",), grow_when_cut_off=False)


def _judge_request(services: ReaderPorts, question: str, sentence: str) -> LLMRequest:
    return _asking(services, JUDGE_PURPOSE, judgement_messages(question, sentence), max_tokens=1)


def judgement_messages(question: str, sentence: str) -> list[dict[str, str]]:
    """What the model is asked to judge `sentence` by: `_shared_start`, then this judgement."""
    asked = render_prompt(JUDGE_PURPOSE, question=question, sentence=sentence)
    return [*_shared_start(), {"role": "user", "content": asked}]


def reading_messages(question: str, sentence: str) -> list[dict[str, str]]:
    """What the model is asked to answer `question` from `sentence` by: `_shared_start`, then this request."""
    asked = render_prompt(READ_PURPOSE, question=question, sentence=sentence)
    return [*_shared_start(), {"role": "user", "content": asked}]


@cache
def _shared_start() -> tuple[dict[str, str], ...]:
    """How every judgement and reading starts, so that the model's cache of it is reused: the instructions,
    then `JUDGE_EXAMPLES` as earlier turns of the conversation (each question and sentence asked as a judgement
    is, and its reply)."""
    turns = [{"role": "system", "content": render_prompt(SENTENCE_SYSTEM)}]
    for block in load_prompt(JUDGE_EXAMPLES).template.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        asked = render_prompt(JUDGE_PURPOSE, question=fields["Question"], sentence=fields["Sentence"])
        turns += [{"role": "user", "content": asked}, {"role": "assistant", "content": fields["Reply"]}]
    return tuple(turns)


def _asking(services: ReaderPorts, purpose: str, messages: list[dict[str, str]], max_tokens: int) -> LLMRequest:
    model = services.settings.agent_model
    return LLMRequest(purpose=purpose, messages=messages, model=model, max_tokens=max_tokens, temperature=0.0)
