"""The adaptive reasoning agent (spec 001, `AGENT_MODE=loop`, the default beside a capable model).

Each round the agent model sees the question, the current time and every prior round with what it retrieved
(sanitised, delimited memory text) and answers one JSON action. SEARCH dispatches to the episodic, semantic or
visual retriever; ANSWER — or the round limit — hands all accumulated memories, numbered, to the response
prompt, whose answer cites the numbers it rests on (checked against what was retrieved). A reply that does not
validate gets one repair (`complete_validated`); an action still invalid takes spec 001's forced answer (after
the plan's searches when nothing was retrieved yet), an answer still invalid is composed.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from pydantic import BaseModel, Field

from worldmm.llm.client import LLMCallError
from worldmm.llm.structured import NonPlaceholderStr, StructuredOutputError, build_request, complete_validated
from worldmm.retrieval.citations import cite
from worldmm.retrieval.compose import compose_answer, score
from worldmm.retrieval.models import AgentAction, AgentAnswer, RetrievedMemory, TraceRound
from worldmm.retrieval.sanitize import numbered_memories
from worldmm.retrieval.searches import Answering, elapsed_ms, plan_searches, quote, search_round

if TYPE_CHECKING:
    from worldmm.llm.port import LLMResponse

logger = Logger(child=True)

AGENT_PURPOSE = "reasoning_agent"
RESPONSE_PURPOSE = "response"


def answer_by_loop(answering: Answering) -> AgentAnswer:
    """The agent's rounds, then the response model's answer over what they retrieved."""
    context, trace = answering.context, answering.trace
    trace.forced_answer = not _agent_rounds(answering)
    context.require_memory()
    if context.failures:
        trace.answer_note = "answered without the memories whose search failed: " + ", ".join(context.failures)
    answer = _final_answer(answering)
    trace.total_ms = elapsed_ms(answering.started)
    return AgentAnswer(answer=answer, memories=list(context.memories.values()), trace=trace)


def _format_now(now: datetime) -> str:
    return now.strftime("%A %Y-%m-%d %H:%M %Z").strip()


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


def _next_action(answering: Answering, round_no: int) -> tuple[AgentAction | None, list[LLMResponse], list[str]]:
    """The agent model's next action (one repair of a reply that does not validate), its responses, and
    the replies that did not validate. None: no valid action, the repair included, or the server refused
    the request (a 4xx: the prompt is too long for it, ...)."""
    services, context = answering.services, answering.context
    settings = services.retrieval_settings
    request = build_request(
        AGENT_PURPOSE,
        model=settings.agent_model,
        max_tokens=settings.agent_max_tokens,
        response_model=AgentAction,
        reasoning_effort=None,
        metadata={"round": str(round_no)},
        now=_format_now(answering.read_at),
        round=round_no,
        max_rounds=settings.max_agent_rounds,
        question=answering.question,
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


def _agent_rounds(answering: Answering) -> bool:
    """The agent loop's rounds, each one action; whether it answered (False: forced, after an invalid action or
    the last round)."""
    settings, trace = answering.services.retrieval_settings, answering.trace
    for round_no in range(1, settings.max_agent_rounds + 1):
        round_started = time.perf_counter()
        action, responses, failures = _next_action(answering, round_no)
        tokens_in = sum(r.prompt_tokens for r in responses)
        tokens_out = sum(r.completion_tokens for r in responses)
        note = _action_note(failures, action is not None)
        if action is None or action.action == "ANSWER":
            trace.rounds.append(
                TraceRound(
                    round=round_no,
                    action="INVALID" if action is None else "ANSWER",
                    elapsed_ms=elapsed_ms(round_started),
                    prompt_tokens=tokens_in,
                    completion_tokens=tokens_out,
                    parse_failures=len(failures),
                    note=note,
                )
            )
            rounds_left = settings.max_agent_rounds - round_no
            return _last_round(answering, action, rounds_left)
        assert action.memory_type is not None and action.query is not None  # AgentAction validates SEARCH
        grounded, drift_note = _grounded_query(action.query)
        query = grounded or answering.question
        note = "; ".join(n for n in (note, drift_note) if n) or None
        result = answering.search(action.memory_type, query)
        answering.context.add(round_no, result)
        trace.rounds.append(
            search_round(round_no, query, result, round_started, tokens_in, tokens_out, note, len(failures))
        )
    return False


def _last_round(answering: Answering, action: AgentAction | None, rounds_left: int) -> bool:
    """After an ANSWER (True) or an action still invalid after its repair (False): the plan's searches where
    the answer would otherwise rest on nothing."""
    context = answering.context
    if action is None:
        # Spec 001's forced answer: the response step answers from what was retrieved so far. With
        # nothing retrieved yet, the fixed plan's searches gather the memories it answers from.
        if not context.searches:
            plan_searches(answering)
        answering.trace.answer_note = "no valid action after a repair: answered from the memories retrieved"
        return False
    if context.searches and not context.memories and not context.failures:
        # An answer resting on searches that found nothing: before "I don't remember", the question
        # itself is searched as the fixed plan does (in the rounds left), so a refusal never stands
        # on a small model's misdirected query alone.
        plan_searches(answering, rounds_left=rounds_left)
    return True


def _final_answer(answering: Answering) -> str:
    """The response model's answer over the memories retrieved, its citations checked (the answer composed
    from the memories when the model's fails validation); the citations go to the trace."""
    services, user_id, question_text, trace = answering.services, answering.user_id, answering.question, answering.trace
    numbered = answering.context.ordered()
    structured = _respond(answering, numbered)
    if structured is None:
        # Never the model's raw text: the answer composed from the memories stands in.
        composed = compose_answer(services, question_text, numbered, answering.asked_at)
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


def _respond(answering: Answering, numbered: list[RetrievedMemory]) -> AnswerResult | None:
    """The response model's structured answer over the numbered memories (one repair of a reply that does
    not validate), or None when there is none: the caller composes the answer instead."""
    services, trace = answering.services, answering.trace
    settings = services.retrieval_settings
    request = build_request(
        RESPONSE_PURPOSE,
        model=settings.agent_model,
        max_tokens=settings.answer_max_tokens,
        response_model=AnswerResult,
        reasoning_effort=None,
        now=_format_now(answering.read_at),
        question=answering.question,
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
        return None, f"query {quote(query)[:60]!r} is not a search: searched with the question"
    return query, None
