"""Answering a question: the adaptive reasoning agent (spec 001), or the fixed plan for a small model.

Loop (`AGENT_MODE=loop`, the default beside a capable model): each round the agent model sees the
question, the current time and every prior round with what it retrieved (sanitised, delimited memory
text) and answers one JSON action. SEARCH dispatches to the episodic, semantic or visual retriever;
ANSWER — or the round limit — hands all accumulated memories, numbered, to the response prompt, whose
answer cites the numbers it rests on (checked against what was retrieved). A reply that does not
validate gets one repair (`complete_validated`); an action still invalid takes spec 001's forced answer
(after the plan's searches when nothing was retrieved yet), an answer still invalid is composed.

Plan (`AGENT_MODE=plan`, the default beside the small local LLM): search episodic and semantic memory
with the question itself and compose the answer from the memories without a model
(`worldmm.retrieval.compose`). Every answer's trace lists its citations; every round its timings.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from pydantic import BaseModel, Field

from worldmm.config import AgentMode
from worldmm.db.queries import search
from worldmm.errors import MemoryUnavailableError
from worldmm.llm.client import LLMCallError
from worldmm.llm.structured import NonPlaceholderStr, StructuredOutputError, build_request, complete_validated
from worldmm.retrieval.citations import cite
from worldmm.retrieval.compose import compose_answer, score
from worldmm.retrieval.hybrid import adjacent_windows
from worldmm.retrieval.lexical import said_stems
from worldmm.retrieval.models import (
    AgentAction,
    AgentAnswer,
    MemoryKind,
    RetrievalResult,
    RetrievedMemory,
    Trace,
    TraceRound,
)
from worldmm.retrieval.reader import read_answer
from worldmm.retrieval.sanitize import format_memories, numbered_memories, sanitize_question
from worldmm.retrieval.vocabulary import Vocabulary

if TYPE_CHECKING:
    from worldmm.llm.port import LLMResponse
    from worldmm.retrieval.port import AgentPorts

logger = Logger(child=True)


AGENT_PURPOSE = "reasoning_agent"
RESPONSE_PURPOSE = "response"

Retriever = Callable[..., RetrievalResult]
"""`retriever(services, user_id, query, now=..., [limit=...]) -> RetrievalResult` (the fixed plan limits episodic)."""


def default_retrievers() -> dict[MemoryKind, Retriever]:
    """The three memories of spec 001."""
    from worldmm.retrieval.episodic_retriever import retrieve_episodic
    from worldmm.retrieval.semantic_retriever import retrieve_semantic
    from worldmm.retrieval.visual_retriever import retrieve_visual

    return {
        MemoryKind.EPISODIC: retrieve_episodic,
        MemoryKind.SEMANTIC: retrieve_semantic,
        MemoryKind.VISUAL: retrieve_visual,
    }


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def _format_now(now: datetime) -> str:
    return now.strftime("%A %Y-%m-%d %H:%M %Z").strip()


class _Context:
    """Memories accumulated over the rounds (deduplicated by id) and the rounds' history text."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.memories: dict[str, RetrievedMemory] = {}
        self.history: list[str] = []
        self.searches = 0
        self.failures: list[str] = []  # searches that failed (not "nothing found"): "episodic: ValueError"
        self.said: Vocabulary | None = None  # every stem the user's memories say, as a search read them

    def add(self, round_no: int, result: RetrievalResult) -> None:
        self.searches += 1
        if result.said is not None:
            self.said = result.said
        for item in result.items:
            self.memories.setdefault(f"{item.memory_type.value}:{item.id}", item)
        header = f'Round {round_no}: SEARCH {result.memory_type.value} "{_quote(result.query)}"'
        body = format_memories(result.items, self.max_chars)
        if result.error is not None:
            self.failures.append(f"{result.memory_type.value}: {result.error}")
            body = f"(the search failed, so this memory is unknown, not empty: {_quote(result.error)})"
        elif not result.items and result.reason:
            body = f"(nothing found: {_quote(result.reason)})"
        self.history.append(f"{header}\n{body}")

    def require_memory(self) -> None:
        """MemoryUnavailableError when every search failed: no answer may claim there is nothing."""
        if self.searches and len(self.failures) == self.searches:
            raise MemoryUnavailableError()

    def history_text(self) -> str:
        if not self.history:
            # Said plainly: a small model otherwise answers round 1 from nothing ("I don't remember that.").
            return "(no searches yet: nothing about the wearer's life is known until you search)"
        return "\n\n".join(self.history)

    def ordered(self) -> list[RetrievedMemory]:
        """The memories in time order (undated last), as the response prompt numbers them."""
        return sorted(
            self.memories.values(),
            key=lambda m: (m.start_time is None, m.start_time or datetime.min.replace(tzinfo=UTC)),
        )


def _quote(text: str) -> str:
    from worldmm.retrieval.sanitize import sanitize_memory_text

    return sanitize_memory_text(text, 300).replace('"', "'")


def _first_action_schema() -> dict[str, Any]:
    """AgentAction's schema as round 1 sends it: a SEARCH with its memory type and query. Nothing is known
    before a search, and a small model otherwise answers from nothing; a server that enforces the schema
    then cannot, and the reply is still read as any action."""
    schema = AgentAction.model_json_schema()
    properties = schema["properties"]
    properties["action"]["enum"] = ["SEARCH"]
    properties["memory_type"] = {"$ref": "#/$defs/MemoryKind"}
    properties["query"] = {"type": "string", "title": "Query"}
    return schema


FIRST_ACTION_SCHEMA = _first_action_schema()


def _next_action(
    services: AgentPorts, question: str, now: datetime, round_no: int, context: _Context
) -> tuple[AgentAction | None, list[LLMResponse], list[str]]:
    """The agent model's next action (one repair of a reply that does not validate), its responses, and
    the replies that did not validate. None: no valid action, the repair included, or the server refused
    the request (a 4xx: the prompt is too long for it, ...)."""
    settings = services.settings
    request = build_request(
        AGENT_PURPOSE,
        model=settings.agent_model,
        max_tokens=settings.agent_max_tokens,
        response_model=AgentAction,
        reasoning_effort=None,
        metadata={"round": str(round_no)},
        now=_format_now(now),
        round=round_no,
        max_rounds=settings.max_agent_rounds,
        question=question,
        history=context.history_text(),
    )
    if not context.searches:
        request = replace(request, response_schema=FIRST_ACTION_SCHEMA)
    try:
        validated = complete_validated(services.llm, request, AgentAction)
    except StructuredOutputError as exc:
        logger.warning("no valid agent action in round %d: %s", round_no, exc)
        return None, exc.responses, exc.failures
    except LLMCallError as exc:
        if not _refused(exc):
            raise
        logger.warning("agent action refused by the model server in round %d: %s", round_no, exc)
        return None, [], [str(exc)[:200]]
    return validated.value, validated.responses, validated.failures


def _refused(exc: LLMCallError) -> bool:
    """A request the model server answered but would not take (4xx other than 429): the model is up, so
    the question is answered with what is known rather than failing."""
    return exc.status is not None and 400 <= exc.status < 500 and exc.status != 429


def _action_note(failures: list[str], valid: bool) -> str | None:
    if not failures:
        return None
    if valid:
        return f"repaired a reply that did not validate: {failures[0][:160]}"
    return f"no valid action after a repair, answering with what is known: {failures[-1][:160]}"


MEMORY_FRAME_AFTER = timedelta(days=7)
"""Relative time words reach back at most a week ("on Friday"): memory older than this is read in its own frame."""

NewestMemory = Callable[["AgentPorts", str, datetime], "datetime | None"]
"""When the user's newest memory (at or before the moment asked) ended; None when there is none."""


def newest_memory_end(services: AgentPorts, user_id: str, asked_at: datetime) -> datetime | None:
    """The newest complete segment's end in PostgreSQL. Every question's first read of the memory store:
    one that cannot be reached is MemoryUnavailableError here, before any model is asked, whether or not
    the agent goes on to search (a lost database is never "I could not find that")."""
    from worldmm.faults import memory_unreachable

    try:
        with services.db.unit_of_work(user_id) as session:
            newest = search.newest_memory_end(session, user_id, asked_at)
    except Exception as exc:
        if memory_unreachable(exc):
            raise MemoryUnavailableError() from exc
        raise
    return newest


def _read_at(newest: datetime | None, asked_at: datetime) -> datetime:
    """The moment the question's time words are read at: when it was asked, or — when the newest memory
    ended over a week before (a recording asked about long after: the demo's sample) — the newest memory's
    end, so "yesterday", "on Friday" and "tomorrow" mean the days of the memory, not of the calendar."""
    if newest is None or asked_at - newest <= MEMORY_FRAME_AFTER:
        return asked_at
    return newest


def answer_question(
    services: AgentPorts,
    user_id: str,
    question: str,
    *,
    now: datetime | None = None,
    retrievers: Mapping[MemoryKind, Retriever] | None = None,
    newest_memory: NewestMemory = newest_memory_end,
    waited_s: float = 0.0,
) -> AgentAnswer:
    """Answer `question` from `user_id`'s memories (agent loop or fixed plan); the trace shows how and cites.
    `waited_s`: how long the question waited before it reached here (behind other requests): the answer's
    deadline counts it."""
    settings = services.settings
    started = time.perf_counter() - max(0.0, waited_s)
    asked_at = now or datetime.now(UTC)
    now = _read_at(newest_memory(services, user_id, asked_at), asked_at)
    retrievers = retrievers if retrievers is not None else default_retrievers()
    question_text = sanitize_question(question)
    context = _Context(settings.memory_text_max_chars)
    mode = settings.agent_mode_effective
    trace = Trace(mode=mode.value, read_at=now if now != asked_at else None)
    if mode == AgentMode.PLAN:
        return _answer_by_plan(services, retrievers, user_id, question_text, (now, asked_at), context, trace, started)

    answered = _agent_rounds(services, retrievers, user_id, question_text, now, context, trace)
    trace.forced_answer = not answered
    context.require_memory()
    if context.failures:
        trace.answer_note = "answered without the memories whose search failed: " + ", ".join(context.failures)
    answer = _final_answer(services, user_id, question_text, (now, asked_at), context, trace)
    trace.total_ms = _ms(started)
    return AgentAnswer(answer=answer, memories=list(context.memories.values()), trace=trace)


def _agent_rounds(
    services: AgentPorts,
    retrievers: Mapping[MemoryKind, Retriever],
    user_id: str,
    question_text: str,
    now: datetime,
    context: _Context,
    trace: Trace,
) -> bool:
    """The agent loop's rounds, each one action; whether it answered (False: forced, after an invalid action or
    the last round)."""
    settings = services.settings
    for round_no in range(1, settings.max_agent_rounds + 1):
        round_started = time.perf_counter()
        action, responses, failures = _next_action(services, question_text, now, round_no, context)
        tokens_in = sum(r.prompt_tokens for r in responses)
        tokens_out = sum(r.completion_tokens for r in responses)
        note = _action_note(failures, action is not None)
        if action is None or action.action == "ANSWER":
            trace.rounds.append(
                TraceRound(
                    round=round_no,
                    action="INVALID" if action is None else "ANSWER",
                    elapsed_ms=_ms(round_started),
                    prompt_tokens=tokens_in,
                    completion_tokens=tokens_out,
                    parse_failures=len(failures),
                    note=note,
                )
            )
            rounds_left = settings.max_agent_rounds - round_no
            return _last_round(services, retrievers, user_id, question_text, now, context, trace, action, rounds_left)
        assert action.memory_type is not None and action.query is not None  # AgentAction validates SEARCH
        grounded, drift_note = _grounded_query(action.query)
        query = grounded or question_text
        note = "; ".join(n for n in (note, drift_note) if n) or None
        result = _search(services, retrievers, user_id, action.memory_type, query, now)
        context.add(round_no, result)
        trace.rounds.append(
            _search_round(round_no, query, result, round_started, tokens_in, tokens_out, note, len(failures))
        )
    return False


def _last_round(
    services: AgentPorts,
    retrievers: Mapping[MemoryKind, Retriever],
    user_id: str,
    question_text: str,
    now: datetime,
    context: _Context,
    trace: Trace,
    action: AgentAction | None,
    rounds_left: int,
) -> bool:
    """After an ANSWER (True) or an action still invalid after its repair (False): the plan's searches where
    the answer would otherwise rest on nothing."""
    if action is None:
        # Spec 001's forced answer: the response step answers from what was retrieved so far. With
        # nothing retrieved yet, the fixed plan's searches gather the memories it answers from.
        if not context.searches:
            _plan_searches(services, retrievers, user_id, question_text, now, context, trace)
        trace.answer_note = "no valid action after a repair: answered from the memories retrieved"
        return False
    if context.searches and not context.memories and not context.failures:
        # An answer resting on searches that found nothing: before "I don't remember", the question
        # itself is searched as the fixed plan does (in the rounds left), so a refusal never stands
        # on a small model's misdirected query alone.
        _plan_searches(services, retrievers, user_id, question_text, now, context, trace, rounds_left=rounds_left)
    return True


def _final_answer(
    services: AgentPorts,
    user_id: str,
    question_text: str,
    times: tuple[datetime, datetime],
    context: _Context,
    trace: Trace,
) -> str:
    """The response model's answer over the memories retrieved, its citations checked (the answer composed
    from the memories when the model's fails validation); the citations go to `trace`."""
    now, asked_at = times
    numbered = context.ordered()
    composed_from = partial(compose_answer, services, question_text, numbered, asked_at)
    structured = _respond(services, trace, question_text, now, numbered)
    if structured is None:
        # Never the model's raw text: the answer composed from the memories stands in.
        composed = composed_from()
        trace.answer_note = "the structured answer failed validation: composed from the memories"
        trace.citations = cite(services, user_id, composed.memories)
        return composed.answer
    answer = structured.answer.strip()
    cited = [numbered[n - 1] for n in dict.fromkeys(structured.cited) if 1 <= n <= len(numbered)]
    if len(cited) < len(set(structured.cited)):
        trace.answer_note = "citations of memories that were not retrieved were dropped"
    if not cited:  # the memory whose sentence scores best backs the model's answer
        best = score(services, question_text, numbered).candidates[:1]
        cited = [c.memory for c in best]
    trace.citations = cite(services, user_id, cited)
    return answer


def _respond(
    services: AgentPorts, trace: Trace, question: str, now: datetime, numbered: list[RetrievedMemory]
) -> AnswerResult | None:
    """The response model's structured answer over the numbered memories (one repair of a reply that does
    not validate), or None when there is none: the caller composes the answer instead."""
    settings = services.settings
    request = build_request(
        RESPONSE_PURPOSE,
        model=settings.agent_model,
        max_tokens=settings.answer_max_tokens,
        response_model=AnswerResult,
        reasoning_effort=None,
        now=_format_now(now),
        question=question,
        context=numbered_memories(numbered, settings.memory_text_max_chars),
    )
    responses: list[LLMResponse] = []
    result: AnswerResult | None = None
    try:
        validated = complete_validated(services.llm, request, AnswerResult)
        responses, trace.answer_parse_failures, result = validated.responses, len(validated.failures), validated.value
    except StructuredOutputError as exc:  # cut off even with more room, or invalid twice: never shown
        logger.warning("unusable answer: %s", exc)
        responses, trace.answer_parse_failures = exc.responses, len(exc.failures)
    except LLMCallError as exc:
        if not _refused(exc):
            raise
        logger.warning("answer refused by the model server: %s", exc)
    trace.answer_prompt_tokens = sum(r.prompt_tokens for r in responses)
    trace.answer_completion_tokens = sum(r.completion_tokens for r in responses)
    return result


PLAN_KINDS = (MemoryKind.EPISODIC, MemoryKind.SEMANTIC)
"""The fixed plan's searches, each with the question itself."""


def _answer_by_plan(
    services: AgentPorts,
    retrievers: Mapping[MemoryKind, Retriever],
    user_id: str,
    question: str,
    times: tuple[datetime, datetime],
    context: _Context,
    trace: Trace,
    started: float,
) -> AgentAnswer:
    """The fixed plan: search episodic and semantic memory with the question (time words read at `times[0]`),
    then compose the answer from what was found and the windows around it (its words as of `times[1]`)."""
    _plan_searches(services, retrievers, user_id, question, times[0], context, trace)
    context.require_memory()
    settings, skipped = services.settings, list[str]()
    notes = [f"answered without the memories whose search failed: {', '.join(context.failures)}"] * bool(
        context.failures
    )
    deadline = started + settings.answer_budget_s
    read = partial(read_answer, services, deadline=deadline, skipped=skipped) if settings.reader_enabled else None
    memories = list(context.memories.values())
    around = adjacent_windows(services, user_id, memories)
    said = _said(services, user_id, context)
    composed = compose_answer(services, question, [*memories, *around], times[1], read, said)
    if composed.unheard:
        notes.append(f"no memory mentions {composed.unheard!r}")
    if composed.read:
        notes.append("written by the local reader; the quoted sentence backs every word of it")
    if skipped:
        notes.append(
            f"past the answer's {settings.answer_budget_s:g} s deadline, the reader's model skipped "
            + " and ".join(skipped)
        )
    trace.answer_note = "; ".join(notes) or None
    trace.citations = cite(services, user_id, composed.memories)
    trace.total_ms = _ms(started)
    return AgentAnswer(answer=composed.answer, memories=memories, trace=trace)


def _said(services: AgentPorts, user_id: str, context: _Context) -> Vocabulary:
    """Every stem the user's memories say: as the episodic search read them from the lexical index, else (that
    search failed, or its retriever reads no index) from the index now, in a unit of work of its own."""
    if context.said is not None:
        return context.said
    with services.db.unit_of_work(user_id) as session:
        return said_stems(session, user_id, services.graph_cache)


def _plan_searches(
    services: AgentPorts,
    retrievers: Mapping[MemoryKind, Retriever],
    user_id: str,
    question: str,
    now: datetime,
    context: _Context,
    trace: Trace,
    rounds_left: int | None = None,
) -> None:
    """The fixed plan's searches (episodic, semantic) with the question itself, as rounds of the trace
    (the first `rounds_left` of them when given; a kind already searched with the question is skipped)."""
    done = {(r.memory_type, r.query) for r in trace.rounds if r.action == "SEARCH"}
    kinds = [kind for kind in PLAN_KINDS if (kind, question) not in done][:rounds_left]
    for round_no, kind in enumerate(kinds, start=len(trace.rounds) + 1):
        round_started = time.perf_counter()
        limit = services.settings.plan_episodic_k if kind == MemoryKind.EPISODIC else None
        result = _search(services, retrievers, user_id, kind, question, now, limit)
        context.add(round_no, result)
        trace.rounds.append(_search_round(round_no, question, result, round_started, 0, 0, "fixed plan"))


def _search_round(
    round_no: int,
    query: str,
    result: RetrievalResult,
    started: float,
    tokens_in: int,
    tokens_out: int,
    note: str | None,
    parse_failures: int = 0,
) -> TraceRound:
    return TraceRound(
        round=round_no,
        action="SEARCH",
        memory_type=result.memory_type,
        query=query,
        retrieved_ids=[m.id for m in result.items],
        elapsed_ms=_ms(started),
        prompt_tokens=tokens_in + result.prompt_tokens,
        completion_tokens=tokens_out + result.completion_tokens,
        parse_failures=parse_failures,
        note="; ".join(n for n in (note, result.reason) if n) or None,
        error=result.error,
    )


class AnswerResult(BaseModel):
    """The response prompt's answer (structured, so a provider with constrained output emits only it)."""

    answer: NonPlaceholderStr
    cited: list[int] = Field(default_factory=list, description="numbers of the memories the answer rests on")


_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
# Words of the action format line: a query made only of them was copied, not written.
_FORMAT_WORDS = frozenset({"your", "search", "query", "words", "memory", "type", "action", "episodic", "semantic"})


def _grounded_query(query: str) -> tuple[str | None, str | None]:
    """The agent's query, or None when it is a copy of the format line or a template (`{{...}}`, `<...>`)."""
    words = {w.casefold() for w in _WORD.findall(query)}
    if any(ch in query for ch in "{}<>") or not (words - _FORMAT_WORDS):
        return None, f"query {_quote(query)[:60]!r} is not a search: searched with the question"
    return query, None


def _search(
    services: AgentPorts,
    retrievers: Mapping[MemoryKind, Retriever],
    user_id: str,
    memory_type: MemoryKind,
    query: str,
    now: datetime,
    limit: int | None = None,
) -> RetrievalResult:
    """Dispatch one SEARCH (`limit`: how many memories, else the retriever's default). A failing retriever
    is a result that says it failed (`error`, in the trace),
    never "nothing found"; a memory store that cannot be reached is MemoryUnavailableError (chat: 503)."""
    from worldmm.errors import GpuUnavailableError
    from worldmm.faults import memory_unreachable

    retriever = retrievers.get(memory_type)
    if retriever is None:
        return RetrievalResult(memory_type=memory_type, query=query, reason=f"{memory_type.value} memory unavailable")
    try:
        return retriever(services, user_id, query, now=now, **({"limit": limit} if limit else {}))
    except GpuUnavailableError:
        raise
    except Exception as exc:
        if memory_unreachable(exc):
            raise MemoryUnavailableError() from exc
        logger.exception("%s retrieval failed", memory_type.value)
        return RetrievalResult(
            memory_type=memory_type,
            query=query,
            reason=f"search failed: {type(exc).__name__}",
            error=f"{type(exc).__name__}: {str(exc)[:200]}",
        )
