"""The LLM port: one request shape for every provider (OpenAI, GPU worker, llama.cpp, scripted)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class ModelBusyError(Exception):
    """A model was answering other calls until past a request's `start_by`: the call was not made."""


@dataclass(frozen=True)
class LLMRequest:
    """A chat-completion request; `purpose` names the prompt template (and the usage row)."""

    purpose: str
    messages: list[dict[str, Any]]
    model: str
    max_tokens: int
    response_schema: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    temperature: float | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    stop: tuple[str, ...] = ()
    """Where the reply ends, when the model writes one of these (not included): a one-line answer stops at "\\n"."""
    start_by: float | None = None
    """The latest moment (`time.perf_counter`) a local model may start on it: a call still waiting for the model
    then is not made (`ModelBusyError`), so an answer's deadline counts the wait behind other questions."""
    grow_when_cut_off: bool = True
    """A reply cut off at `max_tokens` is asked again with more room (`complete_with_room`); False: it comes back
    as it is, marked `truncated` (a short answer that runs on is no short answer, and a second, longer call would
    outrun the deadline it was timed for)."""

    @property
    def prompt_text(self) -> str:
        """All text parts of the messages, joined (for scripted matching and token estimates)."""
        parts: list[str] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(p.get("text", "")) for p in content if p.get("type") == "text")
        return "\n".join(parts)


@dataclass(frozen=True)
class LLMResponse:
    """What a model answered and what it cost."""

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    finish_reason: str | None = None  # "stop", "length" (cut off by max_tokens), ...; None when unknown

    @property
    def truncated(self) -> bool:
        """Whether the output token limit cut the answer off: what was returned is a fragment."""
        return self.finish_reason == "length"


class LLM(Protocol):
    """A chat-completion model."""

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer one request (direct dispatch)."""
        ...

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMResponse | Exception]:
        """Answer many requests; batch-mode providers submit them as one batch. Failures are returned."""
        ...


@runtime_checkable
class LoadsOnFirstUse(Protocol):
    """A model that loads on its first call and can be loaded ahead of it, so a call's time is the call's."""

    def load(self) -> None:
        """Load the model now if it is not loaded yet."""
        ...


@runtime_checkable
class YesNoJudge(Protocol):
    """A model that can say how sure it is of a yes/no question without writing the answer."""

    def yes_log_odds(self, request: LLMRequest) -> float:
        """How much likelier the reply starts with "yes" than with "no" (natural log-odds; > 0: yes)."""
        ...
