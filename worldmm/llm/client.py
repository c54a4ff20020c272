"""LLM adapters behind the one port: OpenAI (direct or Batch API), the GPU worker, any OpenAI-compatible
server, and llama.cpp locally (spec 001 "LLM Client"). `build_llm` chooses from Settings.

The request body is built once, by `chat_completion_body`, for the direct and the batch path alike.
"""

from __future__ import annotations

import copy
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from worldmm.config import LLMMode, LLMProvider, Settings
from worldmm.errors import GpuRequestError, GpuUnavailableError, ModelOutputError, WorldMMError
from worldmm.llm.port import LLM, LLMRequest, LLMResponse
from worldmm.llm.structured import complete_with_room, with_schema_instruction
from worldmm.observability import count

if TYPE_CHECKING:
    from openai import OpenAI

logger = Logger(child=True)

# Models that take `reasoning_effort` and reject a non-default `temperature`.
REASONING_MODEL_PREFIXES = ("gpt-5", "o1", "o3", "o4", "gpt-oss")

# Keywords OpenAI's strict structured outputs does not accept; a schema using them is sent non-strict.
_STRICT_UNSUPPORTED = frozenset(
    {
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "contains",
    }
)

# Keywords strict mode rejects but pydantic still checks on the answer: dropped from the strict schema.
_STRICT_DROPPED = ("default", "minLength", "maxLength")


class LLMConfigurationError(WorldMMError):
    """The settings name an LLM set-up that cannot work (no adapter, batch on a provider without it)."""


class LLMCallError(WorldMMError):
    """A model API call failed after the client's retries (rate limit, server error, bad request)."""

    status_code = 502

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


def is_reasoning_model(model: str) -> bool:
    """Whether `model` is a reasoning model (takes `reasoning_effort`, fixed temperature)."""
    name = model.rsplit("/", 1)[-1].lower()
    return name.startswith(REASONING_MODEL_PREFIXES)


def strict_json_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """`schema` in OpenAI's strict form (closed objects), or None where strict mode cannot express it.

    Strict mode requires every property to be required; an optional field would change meaning (the
    model must then send null), so such schemas go non-strict rather than being rewritten.
    """
    if schema.get("type") != "object":
        return None
    result = copy.deepcopy(schema)

    def visit(node: Any) -> bool:
        if isinstance(node, list):
            return all(visit(item) for item in node)
        if not isinstance(node, dict):
            return True
        if _STRICT_UNSUPPORTED & node.keys():
            return False
        if node.get("type") == "object" or "properties" in node:
            properties = node.get("properties", {})
            if set(node.get("required", [])) != set(properties):
                return False
            if node.get("additionalProperties") not in (None, False):
                return False
            node["additionalProperties"] = False
            node["required"] = list(properties)
        for keyword in _STRICT_DROPPED:
            node.pop(keyword, None)
        children: list[Any] = [node[key] for key in ("items", "anyOf", "prefixItems") if key in node]
        for key in ("properties", "$defs", "definitions"):
            children.extend(node.get(key, {}).values())
        return all(visit(child) for child in children)

    if not visit(result):
        return None
    return result


class StructuredFormat(StrEnum):
    """How a structured request asks for JSON, best first; a server that rejects one is sent the next.

    JSON_SCHEMA: `response_format` json_schema (OpenAI, vLLM, Ollama, LM Studio, llama.cpp's llama-server).
    JSON_OBJECT: `response_format` json_object, the schema in the prompt and in the format's `schema` key
    (llama-cpp-python's server constrains its grammar with it). TEXT: no `response_format`; the schema in the
    prompt. The answer is validated against the same pydantic model whichever format carried it.
    """

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    TEXT = "text"

    def fallback(self) -> StructuredFormat | None:
        """The next format to try when a server rejects this one (None after TEXT)."""
        order = list(StructuredFormat)
        index = order.index(self)
        return order[index + 1] if index + 1 < len(order) else None


FORMAT_REJECTION_STATUSES = frozenset({400, 422, 500})
"""Statuses a server answers an unsupported `response_format` with (llama-cpp-python: 500; others 400/422)."""


def rejects_response_format(exc: Exception) -> bool:
    """Whether `exc` is a server refusing the request's `response_format` (its error names the field)."""
    import openai

    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in FORMAT_REJECTION_STATUSES:
        return False
    return "response_format" in f"{exc.message} {exc.body}"


def _schema_name(purpose: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", purpose)[:64]
    return name or "response"


def response_format(
    request: LLMRequest, structured: StructuredFormat = StructuredFormat.JSON_SCHEMA
) -> dict[str, Any] | None:
    """The `response_format` for a structured request: a JSON schema, strict where possible (or the
    fallback `structured` names: json_object carrying the schema, or none for plain text)."""
    if request.response_schema is None or structured == StructuredFormat.TEXT:
        return None
    if structured == StructuredFormat.JSON_OBJECT:
        return {"type": "json_object", "schema": request.response_schema}
    strict = strict_json_schema(request.response_schema)
    return {
        "type": "json_schema",
        "json_schema": {
            "name": _schema_name(request.purpose),
            "schema": strict if strict is not None else request.response_schema,
            "strict": strict is not None,
        },
    }


def chat_completion_body(
    request: LLMRequest,
    *,
    token_param: str = "max_completion_tokens",
    structured: StructuredFormat = StructuredFormat.JSON_SCHEMA,
) -> dict[str, Any]:
    """The one Chat Completions body for `request`, shared by the direct and the batch path.

    `reasoning_effort` is sent only when set and the model is a reasoning model; `temperature` and `stop` only
    when set and the model is not one (reasoning models reject them). `structured` below JSON_SCHEMA puts
    the schema into the last user message as well (the server will not enforce it by itself).
    """
    messages = request.messages
    if request.response_schema is not None and structured != StructuredFormat.JSON_SCHEMA:
        messages = with_schema_instruction(messages, request.response_schema)
    body: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        token_param: request.max_tokens,
    }
    reasoning = is_reasoning_model(request.model)
    if request.reasoning_effort is not None and reasoning:
        body["reasoning_effort"] = request.reasoning_effort
    if request.temperature is not None and not reasoning:
        body["temperature"] = request.temperature
    fmt = response_format(request, structured)
    if fmt is not None:
        body["response_format"] = fmt
    if request.stop and not reasoning:  # reasoning models (o3, o4-mini, gpt-5) reject `stop`
        body["stop"] = list(request.stop)
    return body


def response_from_body(body: dict[str, Any], *, latency_ms: float) -> LLMResponse:
    """An `LLMResponse` from a Chat Completions response body (direct, or one line of a batch output)."""
    choices = body.get("choices") or []
    if not choices:
        raise ModelOutputError("model returned no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    if message.get("refusal"):
        raise ModelOutputError(f"model refused: {str(message['refusal'])[:120]}")
    text = message.get("content") or ""
    usage = body.get("usage") or {}
    finish_reason = choice.get("finish_reason")
    # A cut-off answer ("length", also one whose budget went to reasoning before any content) comes back
    # marked: `complete_with_room` asks again with more room and never lets the fragment through.
    return LLMResponse(
        text=text,
        model=str(body.get("model") or ""),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        latency_ms=latency_ms,
        finish_reason=str(finish_reason) if finish_reason is not None else None,
    )


def complete_concurrently(
    complete: Callable[[LLMRequest], LLMResponse], requests: Sequence[LLMRequest], concurrency: int
) -> list[LLMResponse | Exception]:
    """Answer `requests` on a bounded thread pool; each failure is returned in its request's place."""

    def one(request: LLMRequest) -> LLMResponse | Exception:
        try:
            return complete(request)
        except Exception as exc:  # a per-request failure is a result (the port's contract)
            return exc

    if len(requests) <= 1:
        return [one(r) for r in requests]
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(requests)))) as pool:
        return list(pool.map(one, requests))


class OpenAILLM:
    """Chat Completions over the `openai` SDK: OpenAI itself, the GPU worker, or any compatible server.

    Retries on 429, 5xx, timeouts and connection errors are the SDK's own (exponential backoff with
    jitter, honouring Retry-After), `max_retries` times. `base_url` may be a callable resolved per call
    (the GPU worker moves when it restarts); one SDK client is kept per base URL.

    Structured requests degrade instead of failing: a server that rejects `response_format` json_schema
    is sent json_object, then plain text, with the schema in the prompt (`StructuredFormat`); the format a
    base URL takes is remembered. Until one has worked there, the first try goes without the SDK's retries
    (llama-cpp-python rejects with a 500, which would otherwise be retried `max_retries` times).
    """

    def __init__(
        self,
        *,
        base_url: str | Callable[[], str] | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        token_param: str = "max_completion_tokens",
        concurrency: int = 8,
        gpu: bool = False,
        max_output_tokens: int | None = None,
        worker_key: Callable[[], str | None] | None = None,
    ) -> None:
        self.max_output_tokens = max_output_tokens  # the most room a truncated answer is retried with
        self._base_url = base_url
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self.token_param = token_param
        self._concurrency = concurrency
        self._gpu = gpu
        self._worker_key = worker_key  # the GPU worker's: each call signed with it
        self._clients: dict[str | None, OpenAI] = {}
        self._formats: dict[str | None, StructuredFormat] = {}  # per base URL: the format it takes
        self._formats_known: set[str | None] = set()  # base URLs where a structured call has worked
        self._lock = threading.Lock()

    def structured_format(self, base_url: str | None = None) -> StructuredFormat:
        """The structured-output format sent to `base_url` (default: the current one)."""
        if base_url is None:
            base_url = self._current_base_url()
        return self._formats.get(base_url, StructuredFormat.JSON_SCHEMA)

    def _current_base_url(self) -> str | None:
        return self._base_url() if callable(self._base_url) else self._base_url

    def client(self) -> OpenAI:
        """The SDK client for the current base URL (created once per URL)."""
        return self._client_for(self._current_base_url())

    def _client_for(self, base_url: str | None) -> OpenAI:
        with self._lock:
            client = self._clients.get(base_url)
            if client is None:
                from openai import OpenAI

                client = OpenAI(
                    api_key=self._api_key,
                    base_url=base_url,
                    timeout=self._timeout_s,
                    max_retries=self._max_retries,
                    http_client=None if self._worker_key is None else _signed_http_client(self._worker_key),
                )
                self._clients[base_url] = client
            return client

    def complete(self, request: LLMRequest) -> LLMResponse:
        """One answer; a truncated one is asked again with more room, then raises TruncatedOutputError."""
        return complete_with_room(self._complete_once, request, ceiling=self.max_output_tokens)

    def _complete_once(self, request: LLMRequest) -> LLMResponse:
        base_url = self._current_base_url()
        client = self._client_for(base_url)
        structured = request.response_schema is not None
        started = time.perf_counter()
        while True:
            fmt = self.structured_format(base_url)
            body = chat_completion_body(request, token_param=self.token_param, structured=fmt)
            probing = structured and base_url not in self._formats_known
            try:
                completion = self._create(client, body, probing=probing)
            except Exception as exc:
                fallback = fmt.fallback() if structured and rejects_response_format(exc) else None
                if fallback is not None:
                    self._degrade(base_url, fmt, fallback, exc)
                    continue
                count("ModelCallsFailed")
                raise self._map_error(exc, request) from exc
            if structured:
                self._formats_known.add(base_url)
            break
        latency_ms = (time.perf_counter() - started) * 1000
        response = response_from_body(completion.model_dump(), latency_ms=latency_ms)
        count("ModelCalls")
        count("ModelPromptTokens", response.prompt_tokens)
        count("ModelCompletionTokens", response.completion_tokens)
        logger.debug(
            "llm_call",
            extra={
                "purpose": request.purpose,
                "model": response.model,
                "prompt_tokens": response.prompt_tokens,
                "completion_tokens": response.completion_tokens,
                "latency_ms": round(latency_ms, 1),
            },
        )
        return response

    @staticmethod
    def _create(client: OpenAI, body: dict[str, Any], *, probing: bool) -> Any:
        """One Chat Completions call. `probing` (the base URL's structured format is not known yet): the
        first try goes without retries, so a format rejection is seen at once; any other retryable failure
        is then sent again with the SDK's retries."""
        if not probing:
            return client.chat.completions.create(**body)
        import openai

        try:
            return client.with_options(max_retries=0).chat.completions.create(**body)
        except openai.APIStatusError as exc:
            if rejects_response_format(exc) or not (exc.status_code == 429 or exc.status_code >= 500):
                raise
        except openai.APIConnectionError:
            pass
        return client.chat.completions.create(**body)

    def _degrade(
        self, base_url: str | None, rejected: StructuredFormat, fallback: StructuredFormat, exc: Exception
    ) -> None:
        with self._lock:
            if self._formats.get(base_url, StructuredFormat.JSON_SCHEMA) == rejected:
                self._formats[base_url] = fallback
        count("StructuredFormatFallbacks")
        logger.warning(
            "structured_format_rejected",
            extra={
                "base_url": base_url,
                "rejected": rejected.value,
                "fallback": fallback.value,
                "status": getattr(exc, "status_code", None),
            },
        )

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMResponse | Exception]:
        return complete_concurrently(self.complete, requests, self._concurrency)

    def _map_error(self, exc: Exception, request: LLMRequest) -> Exception:
        import openai

        from worldmm.worker_signing import UnsignedWorkerResponse

        where = f"{request.purpose} ({request.model})"
        if isinstance(exc, UnsignedWorkerResponse):  # nothing an unsigned answer says is used
            if exc.status >= 500:
                return GpuUnavailableError(f"GPU worker failed for {where}: {exc}")
            return GpuRequestError(f"GPU worker call for {where} not accepted: {exc}")
        if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
            if self._gpu:
                return GpuUnavailableError(f"GPU worker not answering for {where}: {exc}")
            return LLMCallError(f"model API unreachable for {where}: {exc}", retryable=True)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            retryable = status == 429 or status >= 500
            if self._gpu:
                if status in (502, 503, 504):
                    return GpuUnavailableError(f"GPU worker unavailable ({status}) for {where}")
                if 400 <= status < 500 and status != 429:
                    return GpuRequestError(f"GPU worker rejected {where} ({status}): {exc.message}")
            return LLMCallError(
                f"model API error {status} for {where}: {exc.message}", status=status, retryable=retryable
            )
        return exc


class DispatchingLLM:
    """LLM_MODE=batch: extraction requests through the Batch API, interactive purposes direct.

    The agent loop is sequential and waits on each answer, so its purposes (settings
    `llm_direct_purposes`) and any request with metadata `dispatch=direct` never wait on a batch.
    """

    def __init__(self, direct: LLM, batch: LLM, direct_purposes: frozenset[str]) -> None:
        self.direct = direct
        self.batch = batch
        self.direct_purposes = direct_purposes

    def is_direct(self, request: LLMRequest) -> bool:
        return request.purpose in self.direct_purposes or request.metadata.get("dispatch") == "direct"

    def complete(self, request: LLMRequest) -> LLMResponse:
        return (self.direct if self.is_direct(request) else self.batch).complete(request)

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMResponse | Exception]:
        direct_idx = [i for i, r in enumerate(requests) if self.is_direct(r)]
        batch_idx = [i for i, r in enumerate(requests) if not self.is_direct(r)]
        results: list[LLMResponse | Exception | None] = [None] * len(requests)
        if direct_idx:
            for i, result in zip(direct_idx, self.direct.complete_many([requests[i] for i in direct_idx]), strict=True):
                results[i] = result
        if batch_idx:
            for i, result in zip(batch_idx, self.batch.complete_many([requests[i] for i in batch_idx]), strict=True):
                results[i] = result
        return [r if r is not None else LLMCallError("no result") for r in results]


def _signed_http_client(worker_key: Callable[[], str | None]) -> Any:
    """The OpenAI SDK's HTTP client (httpx2) signing each call to the GPU worker and checking each answer."""
    import httpx2
    from openai import DefaultHttpxClient

    from worldmm.worker_signing import signer_for

    return DefaultHttpxClient(auth=signer_for(httpx2.Auth, worker_key))


def _gpu_base_url(gpu_url: Callable[[], str | None]) -> Callable[[], str]:
    def resolve() -> str:
        url = gpu_url()
        if not url:
            raise GpuUnavailableError("GPU worker is not running (no instance to send the request to)")
        return url.rstrip("/") + "/v1"

    return resolve


def build_llm(settings: Settings, gpu_url: Callable[[], str | None]) -> LLM:
    """The LLM adapter the settings name (LLM_PROVIDER, LLM_MODE)."""
    provider = settings.llm_provider
    direct: OpenAILLM | LLM
    if provider == LLMProvider.SCRIPTED:
        raise LLMConfigurationError(
            "LLM_PROVIDER=scripted has no adapter to build: tests pass ScriptedLLM as Services(llm=...)"
        )
    if provider == LLMProvider.LOCAL:
        from worldmm.llm.local import LlamaCppLLM, default_gguf_path

        direct = LlamaCppLLM(
            settings.local_llm_gguf or default_gguf_path(),
            n_ctx=settings.local_llm_context,
            n_threads=settings.local_llm_threads,
        )
    elif provider == LLMProvider.GPU:
        direct = OpenAILLM(
            base_url=_gpu_base_url(gpu_url),
            # The worker key never travels: each request and answer is signed with it (worldmm.worker_signing).
            api_key="signed-requests",
            worker_key=settings.gpu_worker_key,
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            concurrency=settings.llm_concurrency,
            gpu=True,
        )
    elif provider == LLMProvider.OPENAI_COMPATIBLE:
        if not settings.openai_base_url:
            raise LLMConfigurationError("LLM_PROVIDER=openai-compatible needs OPENAI_BASE_URL")
        direct = OpenAILLM(
            base_url=settings.openai_base_url,
            api_key=settings.model_key("openai_api_key") or "no-key",
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            # llama.cpp's server, Ollama and vLLM all take max_tokens; not all take max_completion_tokens.
            token_param="max_tokens",
            concurrency=settings.llm_concurrency,
        )
    else:
        direct = OpenAILLM(
            base_url=settings.openai_base_url,
            api_key=settings.model_key("openai_api_key"),
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            concurrency=settings.llm_concurrency,
        )
    if settings.llm_mode == LLMMode.BATCH and (not isinstance(direct, OpenAILLM) or provider == LLMProvider.GPU):
        raise LLMConfigurationError(f"LLM_MODE=batch needs a provider with a Batch API, not {provider}")
    # The live paths (a window as it closes, chat) always call directly: nobody waits hours on them.
    return direct
