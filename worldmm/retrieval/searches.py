"""The searches an answer rests on: the three memories' retrievers, one search dispatched and recorded as a
round of the trace, and the fixed plan's searches with the question itself (both strategies use them)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger

from worldmm.errors import MemoryUnavailableError
from worldmm.retrieval.models import MemoryKind, RetrievalResult, RetrievedMemory, Trace, TraceRound
from worldmm.retrieval.sanitize import format_memories
from worldmm.retrieval.vocabulary import Vocabulary

if TYPE_CHECKING:
    from worldmm.retrieval.port import AgentPorts

logger = Logger(child=True)

Retriever = Callable[..., RetrievalResult]
"""`retriever(services, user_id, query, now=..., [limit=...]) -> RetrievalResult` (the fixed plan limits episodic)."""

PLAN_KINDS = (MemoryKind.EPISODIC, MemoryKind.SEMANTIC)
"""The fixed plan's searches, each with the question itself."""


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


def elapsed_ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def quote(text: str) -> str:
    from worldmm.retrieval.sanitize import sanitize_memory_text

    return sanitize_memory_text(text, 300).replace('"', "'")


class SearchContext:
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
        header = f'Round {round_no}: SEARCH {result.memory_type.value} "{quote(result.query)}"'
        body = format_memories(result.items, self.max_chars)
        if result.error is not None:
            self.failures.append(f"{result.memory_type.value}: {result.error}")
            body = f"(the search failed, so this memory is unknown, not empty: {quote(result.error)})"
        elif not result.items and result.reason:
            body = f"(nothing found: {quote(result.reason)})"
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


@dataclass
class Answering:
    """One question being answered: who asks, what it searches with, when its time words are read
    (`read_at`) and when it was asked (`asked_at`, a composed answer's "this morning"), and what its rounds
    have gathered so far."""

    services: AgentPorts
    retrievers: Mapping[MemoryKind, Retriever]
    user_id: str
    question: str
    read_at: datetime
    asked_at: datetime
    started: float
    context: SearchContext
    trace: Trace

    def search(self, memory_type: MemoryKind, query: str, limit: int | None = None) -> RetrievalResult:
        """One search of the user's memories, as `run_search` dispatches it."""
        return run_search(self.services, self.retrievers, self.user_id, memory_type, query, self.read_at, limit)


def plan_searches(answering: Answering, rounds_left: int | None = None) -> None:
    """The fixed plan's searches (episodic, semantic) with the question itself, as rounds of the trace
    (the first `rounds_left` of them when given; a kind already searched with the question is skipped)."""
    question, trace = answering.question, answering.trace
    done = {(r.memory_type, r.query) for r in trace.rounds if r.action == "SEARCH"}
    kinds = [kind for kind in PLAN_KINDS if (kind, question) not in done][:rounds_left]
    for round_no, kind in enumerate(kinds, start=len(trace.rounds) + 1):
        round_started = time.perf_counter()
        limit = answering.services.retrieval_settings.plan_episodic_k if kind == MemoryKind.EPISODIC else None
        result = answering.search(kind, question, limit)
        answering.context.add(round_no, result)
        trace.rounds.append(search_round(round_no, question, result, round_started, 0, 0, "fixed plan"))


def search_round(
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
        elapsed_ms=elapsed_ms(started),
        prompt_tokens=tokens_in + result.prompt_tokens,
        completion_tokens=tokens_out + result.completion_tokens,
        parse_failures=parse_failures,
        note="; ".join(n for n in (note, result.reason) if n) or None,
        error=result.error,
    )


def run_search(
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
