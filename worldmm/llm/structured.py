"""Structured calls: a prompt file in, a validated pydantic model out; model output is untrusted."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Generic, TypeVar

from aws_lambda_powertools import Logger
from pydantic import AfterValidator, BaseModel, ValidationError

from worldmm.errors import ModelOutputError, TruncatedOutputError
from worldmm.llm.port import LLM, LLMRequest, LLMResponse
from worldmm.llm.prompts import render_prompt

T = TypeVar("T", bound=BaseModel)

logger = Logger(child=True)

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


_PLACEHOLDER = re.compile(r"^\s*(<[^<>]{0,60}>|\.{2,}|…|\[[^\[\]]{0,60}\]|\{[^{}]{0,60}\})\s*$")


def is_placeholder(text: str) -> bool:
    """True for text a weak model copied from a prompt's format line (`<subject>`, `...`) or left empty."""
    return not text.strip() or bool(_PLACEHOLDER.match(text))


def _reject_placeholder(text: str) -> str:
    if is_placeholder(text):
        raise ValueError("a placeholder or empty text, not content")
    return text


NonPlaceholderStr = Annotated[str, AfterValidator(_reject_placeholder)]
"""A model-written string that must carry content (validated on every structured answer)."""


def extract_json(text: str) -> Any:
    """The first JSON value in a model's answer: think blocks stripped, code fences opened."""
    cleaned = _THINK.sub("", text).strip()
    fenced = _FENCE.search(cleaned)
    if fenced:
        cleaned = fenced.group(1).strip()
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    for i, ch in enumerate(cleaned):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(cleaned[i:])
                return value
            except json.JSONDecodeError:
                continue
    raise ModelOutputError(f"no JSON in model output: {cleaned[:120]!r}")


def parse_model(text: str, model_cls: type[T]) -> T:
    """Parse and validate a model's answer into `model_cls`, or raise ModelOutputError."""
    value = extract_json(text)
    try:
        return model_cls.model_validate(value)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'value'}: {error['msg']}" for error in exc.errors()[:3]
        )
        raise ModelOutputError(f"{model_cls.__name__}: {exc.error_count()} validation errors ({details})") from exc


def build_request(
    purpose: str,
    *,
    model: str,
    max_tokens: int,
    response_model: type[BaseModel] | None = None,
    images: list[str] | None = None,
    system: str | None = None,
    reasoning_effort: str | None = "low",
    metadata: dict[str, str] | None = None,
    **values: object,
) -> LLMRequest:
    """The one request builder: the prompt file `purpose` filled with `values`, plus images and schema."""
    prompt = render_prompt(purpose, **values)
    content: str | list[dict[str, Any]] = prompt
    if images:
        content = [{"type": "text", "text": prompt}] + [
            {"type": "image_url", "image_url": {"url": url}} for url in images
        ]
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": content})
    return LLMRequest(
        purpose=purpose,
        messages=messages,
        model=model,
        max_tokens=max_tokens,
        response_schema=response_model.model_json_schema() if response_model else None,
        reasoning_effort=reasoning_effort,
        metadata=metadata or {},
    )


ROOM_GROWTH = 2
"""A truncated answer is asked again once with this many times the output tokens."""


def complete_with_room(
    complete: Callable[[LLMRequest], LLMResponse], request: LLMRequest, *, ceiling: int | None = None
) -> LLMResponse:
    """`complete(request)`, never returning a truncated answer (`finish_reason == "length"`).

    A cut-off answer is asked again once with ROOM_GROWTH times the output tokens (at most `ceiling`);
    cut off again, it raises TruncatedOutputError, so a fragment is never parsed, stored or shown. Adapters
    answer through this; the tokens of both calls are counted on the answer returned. A request that says
    `grow_when_cut_off=False` gets its cut-off reply back, marked `truncated`, for the caller to drop.
    """
    response = complete(request)
    if not response.truncated or not request.grow_when_cut_off:
        return response
    room = request.max_tokens * ROOM_GROWTH
    if ceiling is not None:
        room = min(room, ceiling)
    first = response
    if room > request.max_tokens:
        logger.warning(
            "llm_output_truncated",
            extra={"purpose": request.purpose, "max_tokens": request.max_tokens, "retry_max_tokens": room},
        )
        response = complete(replace(request, max_tokens=room))
        response = replace(
            response,
            prompt_tokens=first.prompt_tokens + response.prompt_tokens,
            completion_tokens=first.completion_tokens + response.completion_tokens,
        )
        if not response.truncated:
            return response
    raise TruncatedOutputError(
        f"{request.purpose}: the answer was cut off at the output limit ({max(room, request.max_tokens)} tokens): "
        f"{response.text[:60]!r}"
    )


def complete_structured(llm: LLM, request: LLMRequest, model_cls: type[T]) -> tuple[T, LLMResponse]:
    """Send `request` and parse the answer into `model_cls` (raises ModelOutputError on garbage)."""
    response = llm.complete(request)
    return parse_model(response.text, model_cls), response


def with_schema_instruction(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """`messages` with the JSON schema the answer must match appended to the last user message (for a
    server that does not enforce `response_format` json_schema itself)."""
    instruction = render_prompt("json_schema_instruction", schema=json.dumps(schema, separators=(",", ":")))
    out = list(messages)
    for index in range(len(out) - 1, -1, -1):
        message = out[index]
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = [*content, {"type": "text", "text": instruction}]
        else:
            content = f"{content or ''}\n\n{instruction}"
        out[index] = {**message, "content": content}
        return out
    return [*out, {"role": "user", "content": instruction}]


@dataclass(frozen=True)
class Validated(Generic[T]):
    """A structured answer that validated, the model calls it took, and the replies that did not validate."""

    value: T
    responses: list[LLMResponse] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class StructuredOutputError(ModelOutputError):
    """No reply validated, the repair attempt included; carries the calls made (their tokens count)."""

    def __init__(self, message: str, responses: list[LLMResponse], failures: list[str]) -> None:
        super().__init__(message)
        self.responses = responses
        self.failures = failures


def repair_request(request: LLMRequest, reply: str | None, error: str) -> LLMRequest:
    """`request` followed by the reply that did not validate and a request to correct it (one repair)."""
    messages = list(request.messages)
    if reply:
        messages.append({"role": "assistant", "content": reply})
    schema = json.dumps(request.response_schema or {}, separators=(",", ":"))
    messages.append({"role": "user", "content": render_prompt("structured_repair", error=error, schema=schema)})
    return replace(request, messages=messages, metadata={**request.metadata, "repair": "1"})


def complete_validated(llm: LLM, request: LLMRequest, model_cls: type[T]) -> Validated[T]:
    """Send `request` and validate the answer into `model_cls`; a reply that does not validate (or is cut
    off) gets one repair attempt: the model sees its reply and the error. Raises StructuredOutputError when
    the repair fails too. The caller decides what stands in (never the raw text)."""
    responses: list[LLMResponse] = []
    failures: list[str] = []
    current = request
    for attempt in range(2):
        reply: str | None = None
        try:
            response = llm.complete(current)
            responses.append(response)
            reply = response.text
            return Validated(parse_model(reply, model_cls), responses, failures)
        except ModelOutputError as exc:  # unparseable, invalid, cut off even with more room, refused
            failures.append(str(exc))
            logger.warning(
                "structured_reply_invalid",
                extra={"purpose": request.purpose, "attempt": attempt + 1, "error": str(exc)[:200]},
            )
            current = repair_request(request, reply, str(exc)[:300])
    message = f"{request.purpose}: no valid reply after a repair: {failures[-1]}"
    raise StructuredOutputError(message, responses, failures)
