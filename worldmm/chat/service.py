"""Answer a chat question in a persistent thread (spec 004 handle_chat)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger

from worldmm.chat.models import MAX_QUESTION_CHARS
from worldmm.chat.settings import ChatSettingsPorts
from worldmm.config import LLMProvider
from worldmm.crashpoints import crash_point
from worldmm.errors import BadRequest, Forbidden, GpuUnavailableError, MemoryUnavailableError
from worldmm.faults import memory_unreachable
from worldmm.retrieval.port import AgentPorts

if TYPE_CHECKING:
    from worldmm.chat.port import ChatRepository
    from worldmm.gpu.demand import GpuDemand

logger = Logger(child=True)


class ChatPorts(AgentPorts, ChatSettingsPorts, Protocol):
    """The ports a chat turn uses: the agent's, the chat store and the GPU worker's address."""

    @property
    def chats(self) -> ChatRepository: ...

    @property
    def gpu_demand(self) -> GpuDemand: ...

    def gpu_url(self) -> str | None: ...


GPU_STARTING_ANSWER = (
    "Chat is not available right now: the GPU worker is starting. Try again in a few minutes."
)


@dataclass(frozen=True)
class ChatResult:
    """What the chat endpoints return: the answer, its thread, and (verbose) the agent's trace."""

    answer: str
    chat_id: str | None
    trace: dict[str, Any] | None = None


def answering_model_ready(services: ChatPorts) -> bool:
    """False only when answers come from the GPU worker and it is absent or not yet ready."""
    if services.chat_settings.llm_provider != LLMProvider.GPU:
        return True
    base_url = services.gpu_url()
    if base_url is None:
        return False
    from worldmm.gpu.client import worker_ready

    return worker_ready(base_url, services.chat_settings.gpu)


def _gpu_starting(services: ChatPorts, reason: str) -> ChatResult:
    logger.info(
        "chat unavailable: GPU worker starting", extra={"step": "chat.gpu-starting", "reason": reason}
    )
    services.gpu_demand.wake("chat")  # the answer says it is starting: make it so
    return ChatResult(answer=GPU_STARTING_ANSWER, chat_id=None, trace=None)


def handle_chat(
    services: ChatPorts,
    user_id: str,
    question: str,
    chat_id: str | None = None,
    *,
    verbose: bool = False,
    now: datetime | None = None,
    waited_s: float = 0.0,
) -> ChatResult:
    """Check ownership, answer with the reasoning agent, then save both messages to the thread. `waited_s`:
    how long the request waited before it reached here (the answer's deadline counts it).

    A question longer than MAX_QUESTION_CHARS is `BadRequest` and a chat_id that is not the caller's (or
    does not exist) `Forbidden`, before anything runs. While the GPU worker that answers is starting, the
    reply says so and nothing is written. When memory cannot be reached (the database is down or the
    connection lost) it is `MemoryUnavailableError` (503) and nothing is written: a lost connection is
    never "nothing found".
    """
    if len(question) > MAX_QUESTION_CHARS:
        raise BadRequest(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    try:
        return _handle_chat(services, user_id, question, chat_id, verbose=verbose, now=now, waited_s=waited_s)
    except MemoryUnavailableError:
        logger.warning("chat unavailable: memory unreachable", extra={"step": "chat.memory-unreachable"})
        raise
    except Exception as exc:
        if not memory_unreachable(exc):
            raise
        logger.warning(
            "chat unavailable: memory unreachable",
            extra={"step": "chat.memory-unreachable", "error": type(exc).__name__},
        )
        raise MemoryUnavailableError() from exc


def _handle_chat(
    services: ChatPorts,
    user_id: str,
    question: str,
    chat_id: str | None,
    *,
    verbose: bool,
    now: datetime | None,
    waited_s: float,
) -> ChatResult:
    if chat_id is not None and not services.chats.chat_owned_by(user_id, chat_id):
        raise Forbidden("chat not found or not yours")
    if not answering_model_ready(services):
        return _gpu_starting(services, "worker not ready")

    from worldmm.retrieval.agent import answer_question

    try:
        result = answer_question(services, user_id, question, now=now, waited_s=waited_s)
    except GpuUnavailableError as exc:
        if services.chat_settings.llm_provider != LLMProvider.GPU:
            raise
        # The worker went away between its health check and the answer: nothing is written yet.
        return _gpu_starting(services, str(exc))

    crash_point("chat.answered")
    # The question and its answer (and a new chat) are written together: never a question left unanswered.
    chat_id = services.chats.save_turn(user_id, chat_id, question, result.answer)
    crash_point("chat.saved")
    logger.info("chat answered", extra={"step": "chat.answered", "chat_id": chat_id})
    return ChatResult(
        answer=result.answer,
        chat_id=chat_id,
        trace=result.trace.model_dump(mode="json") if verbose else None,
    )
