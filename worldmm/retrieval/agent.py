"""The adaptive reasoning agent (spec 001): up to 5 rounds of SEARCH / ANSWER, then the final answer.

Each round the agent model sees the question, the current time and every prior round with what it
retrieved (sanitised, delimited memory text) and answers one JSON action. SEARCH dispatches to the
episodic, semantic or visual retriever; ANSWER — or the round limit — hands all accumulated memories
to the response prompt. An unparseable action is retried once, then the agent answers with what it
has. Every round lands in the trace with its timings and tokens.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from pydantic import BaseModel

from worldmm.errors import ModelOutputError
from worldmm.llm.structured import NonPlaceholderStr, build_request, parse_model
from worldmm.retrieval.models import (
    AgentAction,
    AgentAnswer,
    MemoryKind,
    RetrievalResult,
    RetrievedMemory,
    Trace,
    TraceRound,
)
from worldmm.retrieval.sanitize import format_memories, sanitize_question

if TYPE_CHECKING:
    from worldmm.llm.port import LLMResponse
    from worldmm.services import Services

logger = Logger(service="worldmm", child=True)

AGENT_PURPOSE = "reasoning_agent"
RESPONSE_PURPOSE = "response"

Retriever = Callable[..., RetrievalResult]
"""`retriever(services, user_id, query, now=...) -> RetrievalResult`."""


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

    def add(self, round_no: int, result: RetrievalResult) -> None:
        for item in result.items:
            self.memories.setdefault(f"{item.memory_type.value}:{item.id}", item)
        header = f'Round {round_no}: SEARCH {result.memory_type.value} "{_quote(result.query)}"'
        body = format_memories(result.items, self.max_chars)
        if not result.items and result.reason:
            body = f"(nothing found: {_quote(result.reason)})"
        self.history.append(f"{header}\n{body}")

    def history_text(self) -> str:
        return "\n\n".join(self.history) if self.history else "(no searches yet)"

    def memories_text(self) -> str:
        ordered = sorted(
            self.memories.values(),
            key=lambda m: (m.start_time is None, m.start_time or datetime.min.replace(tzinfo=UTC)),
        )
        return format_memories(ordered, self.max_chars)


def _quote(text: str) -> str:
    from worldmm.retrieval.sanitize import sanitize_memory_text

    return sanitize_memory_text(text, 300).replace('"', "'")


def _next_action(
    services: Services, question: str, now: datetime, round_no: int, context: _Context
) -> tuple[AgentAction | None, list[LLMResponse], str | None]:
    """The agent model's next action (one retry on unparseable output), its responses, and a note."""
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
    responses: list[LLMResponse] = []
    errors: list[str] = []
    for _attempt in range(2):
        response = services.llm.complete(request)
        responses.append(response)
        try:
            return (
                parse_model(response.text, AgentAction),
                responses,
                (f"retried after unparseable action: {errors[0]}" if errors else None),
            )
        except ModelOutputError as exc:
            errors.append(str(exc))
            logger.warning("unparseable agent action in round %d: %s", round_no, exc)
    return None, responses, f"unparseable action twice, answering with what is known: {errors[-1]}"


def answer_question(
    services: Services,
    user_id: str,
    question: str,
    *,
    now: datetime | None = None,
    retrievers: Mapping[MemoryKind, Retriever] | None = None,
) -> AgentAnswer:
    """Answer `question` from `user_id`'s memories with the spec 001 agent loop; the trace shows how."""
    settings = services.settings
    started = time.perf_counter()
    now = now or datetime.now(UTC)
    retrievers = retrievers if retrievers is not None else default_retrievers()
    question_text = sanitize_question(question)
    context = _Context(settings.memory_text_max_chars)
    trace = Trace()

    answered = False
    for round_no in range(1, settings.max_agent_rounds + 1):
        round_started = time.perf_counter()
        action, responses, note = _next_action(services, question_text, now, round_no, context)
        tokens_in = sum(r.prompt_tokens for r in responses)
        tokens_out = sum(r.completion_tokens for r in responses)
        if action is None or action.action == "ANSWER":
            # ANSWER, or an action unparseable twice: stop searching and answer from what is known.
            trace.rounds.append(
                TraceRound(
                    round=round_no,
                    action="INVALID" if action is None else "ANSWER",
                    elapsed_ms=_ms(round_started),
                    prompt_tokens=tokens_in,
                    completion_tokens=tokens_out,
                    note=note,
                )
            )
            answered = True
            break
        assert action.memory_type is not None and action.query is not None  # AgentAction validates SEARCH
        grounded, drift_note = _grounded_query(action.query)
        query = grounded or question_text
        note = "; ".join(n for n in (note, drift_note) if n) or None
        result = _search(services, retrievers, user_id, action.memory_type, query, now)
        context.add(round_no, result)
        trace.rounds.append(
            TraceRound(
                round=round_no,
                action="SEARCH",
                memory_type=action.memory_type,
                query=query,
                retrieved_ids=[m.id for m in result.items],
                elapsed_ms=_ms(round_started),
                prompt_tokens=tokens_in + result.prompt_tokens,
                completion_tokens=tokens_out + result.completion_tokens,
                note="; ".join(n for n in (note, result.reason) if n) or None,
            )
        )
    trace.forced_answer = not answered

    request = build_request(
        RESPONSE_PURPOSE,
        model=settings.agent_model,
        max_tokens=settings.answer_max_tokens,
        response_model=AnswerResult,
        reasoning_effort=None,
        now=_format_now(now),
        question=question_text,
        context=context.memories_text(),
    )
    response = services.llm.complete(request)
    trace.answer_prompt_tokens = response.prompt_tokens
    trace.answer_completion_tokens = response.completion_tokens
    answer = _answer_text(response.text)
    evidence = (
        _ungrounded_evidence(answer, question_text, list(context.memories.values()))
        if settings.answer_grounding_guard
        else None
    )
    if evidence is not None:
        answer = f"{answer}\n\n{evidence}"
        trace.answer_note = "the answer named nothing from the memories: the best-ranked memory is quoted with it"
    trace.total_ms = _ms(started)
    return AgentAnswer(answer=answer, memories=list(context.memories.values()), trace=trace)


def _ungrounded_evidence(answer: str, question: str, memories: list[RetrievedMemory]) -> str | None:
    """The memory closest to the question, quoted when the answer shares no content word with any memory.

    A capable model's answer draws on the memories it was given; a weak one (a tiny local model) may
    answer with nothing from them. Then the wearer sees what was remembered instead of an unsupported
    reply. No memories: nothing to quote.
    """
    if not memories:
        return None
    memory_words = _content_words(" ".join(m.text for m in memories))
    if _content_words(answer) & memory_words:
        return None
    # Scores from different rounds and retrievers are not comparable: rank by words shared with the question.
    asked = _content_words(question)
    best = max(memories, key=lambda m: (len(_content_words(m.text) & asked), m.score))
    when = f" ({best.start_time:%a %d %b %H:%M})" if best.start_time else ""
    return f"From your memories{when}: {_quote(best.text)}"


class AnswerResult(BaseModel):
    """The response prompt's answer (structured, so a provider with constrained output emits only it)."""

    answer: NonPlaceholderStr


def _answer_text(text: str) -> str:
    """The answer field, or the plain text when the model answered without JSON."""
    try:
        return parse_model(text, AnswerResult).answer.strip()
    except ModelOutputError:
        return text.strip()


_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
# Words of the action format line: a query made only of them was copied, not written.
_FORMAT_WORDS = frozenset({"your", "search", "query", "words", "memory", "type", "action", "episodic", "semantic"})


_STOPWORDS = frozenset(
    {"the", "and", "you", "your", "was", "were", "are", "what", "who", "when", "where", "did", "this", "that"}
)


def _content_words(text: str) -> set[str]:
    """Lower-cased words of three letters or more, less the commonest function words."""
    return {w for w in (m.casefold() for m in _WORD.findall(text)) if len(w) >= 3 and w not in _STOPWORDS}


def _grounded_query(query: str) -> tuple[str | None, str | None]:
    """The agent's query, or None when it is a copy of the format line or a template (`{{...}}`, `<...>`)."""
    words = {w.casefold() for w in _WORD.findall(query)}
    if any(ch in query for ch in "{}<>") or not (words - _FORMAT_WORDS):
        return None, f"query {_quote(query)[:60]!r} is not a search: searched with the question"
    return query, None


def _search(
    services: Services,
    retrievers: Mapping[MemoryKind, Retriever],
    user_id: str,
    memory_type: MemoryKind,
    query: str,
    now: datetime,
) -> RetrievalResult:
    """Dispatch one SEARCH; a failing retriever is an empty result with the reason, never a failed answer."""
    from worldmm.errors import GpuUnavailableError

    retriever = retrievers.get(memory_type)
    if retriever is None:
        return RetrievalResult(memory_type=memory_type, query=query, reason=f"{memory_type.value} memory unavailable")
    try:
        return retriever(services, user_id, query, now=now)
    except GpuUnavailableError:
        raise
    except Exception as exc:
        logger.exception("%s retrieval failed", memory_type.value)
        return RetrievalResult(memory_type=memory_type, query=query, reason=f"search failed: {type(exc).__name__}")
