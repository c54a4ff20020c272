"""The local reader: a small model writes a short answer from the composer's best sentence (`read_answer`), shown
only when one sentence of what it read states every name, number and content word of it that the question does
not.

Every reading starts with the same instructions and worked judgements (`JUDGE_EXAMPLES`), so the model's cache of
that start is reused. It keeps to the answer's deadline: a reading that the recent ones say would end after it
is not made (the composer's quoted sentence stands).
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

from worldmm.llm.port import LLMRequest, LoadsOnFirstUse, ModelBusyError
from worldmm.llm.prompts import load_prompt, render_prompt
from worldmm.retrieval.asks import analyse, lexemes, rarity
from worldmm.retrieval.sanitize import sanitize_memory_text

if TYPE_CHECKING:
    from worldmm.retrieval.port import ReaderPorts
    from worldmm.retrieval.sentences import Candidate

logger = Logger(child=True)
_T = TypeVar("_T")

READ_PURPOSE = "read_answer"
JUDGE_PURPOSE = "judge_sentence"
SENTENCE_SYSTEM = "heard_sentence_system"
"""The instructions a reading of a heard sentence starts with."""
JUDGE_EXAMPLES = "judge_sentence_examples"
"""Worked judgements (two yes, two no; none about the sample recordings) shown before each reading."""
READER_MAX_TOKENS = 16
"""A short answer's tokens: a reading cut off here is dropped, not asked again."""
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
) -> str | None:
    """The model's short answer to `question` from `line` (the composer's best), or None when it fails the check
    or would not be written by `deadline` (`time.perf_counter`; then `skipped` is told)."""
    limit, skipped = services.retrieval_settings.memory_text_max_chars, [] if skipped is None else skipped
    request = _read_request(services, question, sanitize_memory_text(line.quote, limit))
    try:
        timed = _ready(services, request, deadline)
        if timed is None:
            skipped.append("writing a short answer")
            return None
        reply = _timed(services, timed, services.reader_llm.complete)
    except ModelBusyError:
        skipped.append("writing a short answer (the model was busy with other questions)")
        return None
    except Exception as exc:  # the composed answer stands; the log says why
        logger.warning("reader unavailable: %s", type(exc).__name__)
        return None
    answer = "" if reply.truncated else _clean(reply.text)  # a line cut off at its tokens is no short answer
    if not answer or _UNKNOWN.search(answer):
        return None
    stated, names, asked = lexemes(answer), lexemes(" ".join(_NAMED.findall(answer))), lexemes(question)
    if not stated - asked:
        return None  # says nothing the question does not
    # One sentence (read, or with the one it was quoted with) states names and numbers; others may be the question's
    if any(names <= support and stated <= support | asked for support in map(lexemes, (line.said, line.quote))):
        return answer.rstrip(".")
    logger.info("reader answer unsupported", extra={"unsupported": sorted(stated - asked)})
    return None


_TIMING_QUESTION, _WARM_UP_LINE = "Where did I leave my keys?", "My keys are on the hallway shelf."
_TIMING_LINE = "I am putting my keys in the drawer of my desk."


def load_model(services: ReaderPorts) -> None:
    """Load the reader's model once (a server's start-up, or the first question), warm it untimed — the first
    call reads the shared start and pages the weights in — then time one reading, so that the deadline knows
    this host's speed. A model that cannot be loaded is logged; the composer answers. The question analyser's
    spaCy model (~2 s to load) and wordfreq's English list (~0.25 s) are read here too, not in the first
    question's time."""
    _load_question_models()
    model = services.reader_llm
    if not isinstance(model, LoadsOnFirstUse) or model in _LOADED:
        return
    try:
        model.load()
        _LOADED.add(model)  # loaded: a call that fails below fails as a question's would, not loaded again
        model.complete(_read_request(services, _TIMING_QUESTION, _WARM_UP_LINE))
        _timed(services, _read_request(services, _TIMING_QUESTION, _TIMING_LINE), model.complete)
    except Exception as exc:  # the first question tries again; the composer answers meanwhile
        logger.warning("reader model not loaded: %s", type(exc).__name__)


@cache
def _load_question_models() -> None:
    """Once a process: spaCy's pipeline and wordfreq's list (`load_model` runs before every reading)."""
    analyse(_TIMING_QUESTION)
    rarity(_TIMING_QUESTION)


_LOADED: WeakSet[LoadsOnFirstUse] = WeakSet()
"""The reader's models `load_model` loaded, warmed and timed."""


def _ready(services: ReaderPorts, request: LLMRequest, deadline: float | None) -> LLMRequest | None:
    """`request`, to be started by when it is expected to end by `deadline` (the wait for the model behind other
    questions counts), or None when it is not expected to fit."""
    load_model(services)
    times, size = services.reader_call_times, read_anew(request)
    if not times.fits(request.purpose, deadline, size):
        return None
    return request if deadline is None else replace(request, start_by=deadline - times.expected(request.purpose, size))


def _timed(services: ReaderPorts, request: LLMRequest, call: Callable[[LLMRequest], _T]) -> _T:
    """`call(request)`, its time recorded against the request's purpose and `read_anew` size."""
    started = time.perf_counter()
    try:
        return call(request)
    finally:
        services.reader_call_times.record(request.purpose, time.perf_counter() - started, read_anew(request))


def read_anew(request: LLMRequest) -> int:
    """The characters past the start every call shares (cached by the model): what a call's time grows with."""
    return sum(len(str(message.get("content", ""))) for message in request.messages[len(_shared_start()) :])


def _read_request(services: ReaderPorts, question: str, sentence: str) -> LLMRequest:
    """The reading of `sentence`: its first line, not asked again when cut off at `READER_MAX_TOKENS`."""
    messages, model = judgement_messages(question, sentence, READ_PURPOSE), services.retrieval_settings.agent_model
    return LLMRequest(
        READ_PURPOSE, messages, model, READER_MAX_TOKENS, temperature=0.0, stop=("\n",), grow_when_cut_off=False
    )


def judgement_messages(question: str, sentence: str, purpose: str = JUDGE_PURPOSE) -> list[dict[str, str]]:
    """What the model is asked about `sentence` by: `_shared_start`, then this judgement (or reading)."""
    return [*_shared_start(), {"role": "user", "content": render_prompt(purpose, question=question, sentence=sentence)}]


@cache
def _shared_start() -> tuple[dict[str, str], ...]:
    """How every judgement and reading starts: the instructions, then `JUDGE_EXAMPLES` as earlier turns."""
    turns = [{"role": "system", "content": render_prompt(SENTENCE_SYSTEM)}]
    for block in load_prompt(JUDGE_EXAMPLES).template.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        asked = render_prompt(JUDGE_PURPOSE, question=fields["Question"], sentence=fields["Sentence"])
        turns += [{"role": "user", "content": asked}, {"role": "assistant", "content": fields["Reply"]}]
    return tuple(turns)
