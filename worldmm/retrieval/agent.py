"""Answering a question: the moment its time words are read at, then one of two strategies over the three
memories — the adaptive reasoning agent (spec 001, `worldmm.retrieval.loop`, beside a capable model) or the
fixed plan (`worldmm.retrieval.plan`, beside the small local LLM). Every answer's trace lists its citations;
every round its timings."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from worldmm.config import AgentMode
from worldmm.db.queries import search
from worldmm.errors import MemoryUnavailableError
from worldmm.retrieval.loop import answer_by_loop
from worldmm.retrieval.models import AgentAnswer, MemoryKind, Trace
from worldmm.retrieval.plan import answer_by_plan
from worldmm.retrieval.sanitize import sanitize_question
from worldmm.retrieval.searches import Answering, Retriever, SearchContext, default_retrievers

if TYPE_CHECKING:
    from worldmm.retrieval.port import AgentPorts

__all__ = ["AgentAnswer", "Retriever", "answer_question", "default_retrievers", "newest_memory_end"]


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
    settings = services.retrieval_settings
    started = time.perf_counter() - max(0.0, waited_s)
    asked_at = now or datetime.now(UTC)
    read_at = _read_at(newest_memory(services, user_id, asked_at), asked_at)
    mode = settings.agent_mode_effective
    answering = Answering(
        services=services,
        retrievers=retrievers if retrievers is not None else default_retrievers(),
        user_id=user_id,
        question=sanitize_question(question),
        read_at=read_at,
        asked_at=asked_at,
        started=started,
        context=SearchContext(settings.memory_text_max_chars),
        trace=Trace(mode=mode.value, read_at=read_at if read_at != asked_at else None),
    )
    return answer_by_plan(answering) if mode == AgentMode.PLAN else answer_by_loop(answering)
