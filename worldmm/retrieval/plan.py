"""The fixed plan (`AGENT_MODE=plan`, the default beside the small local LLM): search episodic and semantic
memory with the question itself and compose the answer from the memories and the windows around them
(`worldmm.retrieval.compose`), read by the local reader where it is on."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from worldmm.retrieval.citations import cite
from worldmm.retrieval.compose import compose_answer
from worldmm.retrieval.hybrid import adjacent_windows
from worldmm.retrieval.lexical import said_stems
from worldmm.retrieval.models import AgentAnswer
from worldmm.retrieval.reader import read_answer
from worldmm.retrieval.searches import Answering, elapsed_ms, plan_searches
from worldmm.retrieval.vocabulary import Vocabulary

if TYPE_CHECKING:
    pass


def answer_by_plan(answering: Answering) -> AgentAnswer:
    """The fixed plan: search episodic and semantic memory with the question (time words read at `read_at`),
    then compose the answer from what was found and the windows around it (its words as of `asked_at`)."""
    services, user_id, context, trace = answering.services, answering.user_id, answering.context, answering.trace
    plan_searches(answering)
    context.require_memory()
    settings, skipped = services.retrieval_settings, list[str]()
    failed = ", ".join(context.failures)
    notes = [f"answered without the memories whose search failed: {failed}"] if failed else []
    deadline = answering.started + settings.answer_budget_s
    read = partial(read_answer, services, deadline=deadline, skipped=skipped) if settings.reader_enabled else None
    memories = list(context.memories.values())
    found = [*memories, *adjacent_windows(services, user_id, memories)]
    composed = compose_answer(services, answering.question, found, answering.asked_at, read, _said(answering))
    if composed.asked_as:
        notes.append(f"asked as {composed.asked_as!r}: a name spelt as the memories spell it")
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
    trace.total_ms = elapsed_ms(answering.started)
    return AgentAnswer(answer=composed.answer, memories=memories, trace=trace)


def _said(answering: Answering) -> Vocabulary:
    """Every stem the user's memories say: as the episodic search read them from the lexical index, else (that
    search failed, or its retriever reads no index) from the index now, in a unit of work of its own."""
    if answering.context.said is not None:
        return answering.context.said
    services = answering.services
    with services.db.unit_of_work(answering.user_id) as session:
        return said_stems(session, answering.user_id, services.graph_cache)
