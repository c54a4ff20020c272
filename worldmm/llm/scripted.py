"""A scripted LLM for tests and benchmarks: canned responses per prompt template (spec 001 Layer 1)."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from worldmm.llm.port import LLMRequest, LLMResponse
from worldmm.llm.structured import complete_with_room


@dataclass(frozen=True)
class Truncated:
    """A scripted answer cut off by the output token limit (`finish_reason == "length"`)."""

    text: str


Script = str | dict[str, Any] | list[Any] | Truncated | Callable[[LLMRequest], Any]


class UnscriptedPromptError(AssertionError):
    """A test reached a prompt it did not script."""


class ScriptedLLM:
    """Answers each request from the script for its `purpose`.

    A script is a fixed answer (str, or a dict/list sent as JSON, or `Truncated(text)`: cut off by the
    token limit), a callable of the request, or a queue of those (`queue(purpose, [...])`) consumed in
    order. Every request is recorded in `calls` (a truncated answer's retry with more room too).
    """

    def __init__(self, scripts: dict[str, Script] | None = None, *, latency_s: float = 0.0) -> None:
        self._scripts: dict[str, Script] = dict(scripts or {})
        self._queues: dict[str, list[Script]] = defaultdict(list)
        self._lock = threading.Lock()
        self.latency_s = latency_s
        self.calls: list[LLMRequest] = []

    def script(self, purpose: str, answer: Script) -> ScriptedLLM:
        self._scripts[purpose] = answer
        return self

    def queue(self, purpose: str, answers: Iterable[Script]) -> ScriptedLLM:
        with self._lock:
            self._queues[purpose].extend(answers)
        return self

    def calls_for(self, purpose: str) -> list[LLMRequest]:
        return [c for c in self.calls if c.purpose == purpose]

    def complete(self, request: LLMRequest) -> LLMResponse:
        # As every adapter: a truncated answer is asked again with more room, then raises.
        return complete_with_room(self._answer, request)

    def yes_log_odds(self, request: LLMRequest) -> float:
        """The scripted answer for the request's purpose, read as a number (the log-odds of yes)."""
        return float(self._answer(request).text)

    def _answer(self, request: LLMRequest) -> LLMResponse:
        with self._lock:
            self.calls.append(request)
            if self._queues.get(request.purpose):
                answer: Script = self._queues[request.purpose].pop(0)
            elif request.purpose in self._scripts:
                answer = self._scripts[request.purpose]
            else:
                raise UnscriptedPromptError(f"no scripted answer for prompt {request.purpose!r}")
        if self.latency_s:
            time.sleep(self.latency_s)
        if callable(answer):
            answer = answer(request)
        if isinstance(answer, Exception):
            raise answer
        finish_reason = "stop"
        if isinstance(answer, Truncated):
            answer, finish_reason = answer.text, "length"
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return LLMResponse(
            text=text,
            model=f"scripted:{request.model}",
            prompt_tokens=max(1, len(request.prompt_text) // 4),
            completion_tokens=max(1, len(text) // 4),
            finish_reason=finish_reason,
        )

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMResponse | Exception]:
        results: list[LLMResponse | Exception] = []
        for request in requests:
            try:
                results.append(self.complete(request))
            except UnscriptedPromptError:
                raise
            except Exception as exc:  # a scripted failure is a per-request result, as in batch mode
                results.append(exc)
        return results
