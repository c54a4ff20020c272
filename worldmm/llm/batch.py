"""The OpenAI Batch API behind the LLM port: JSONL in, submit, poll, results mapped back by `custom_id`.

Each line's body is the direct path's body (`chat_completion_body`), so a request means the same thing
in both modes (spec 001 "LLM Client"). A request that failed inside a batch comes back as its own
exception; the others still succeed.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from aws_lambda_powertools import Logger

from worldmm.config import LLMMode, Settings
from worldmm.errors import ModelOutputError, TruncatedOutputError, WorldMMError
from worldmm.llm.client import DispatchingLLM, OpenAILLM, chat_completion_body, response_from_body
from worldmm.llm.port import LLM, LLMRequest, LLMResponse

if TYPE_CHECKING:
    from openai import OpenAI

logger = Logger(child=True)

ENDPOINT: Final = "/v1/chat/completions"
TERMINAL_STATUSES = frozenset({"completed", "failed", "expired", "cancelled"})
MAX_REQUESTS_PER_BATCH = 50_000  # the Batch API's limit per input file


class BatchRequestError(WorldMMError):
    """One request of a batch failed (its error line, a failed/expired batch, or no result at all)."""

    status_code = 502

    def __init__(self, message: str, *, custom_id: str, status: int | None = None) -> None:
        super().__init__(message)
        self.custom_id = custom_id
        self.status = status


class BatchTimeoutError(WorldMMError):
    """A batch did not reach a terminal status within the wait limit."""


@dataclass(frozen=True)
class _Submitted:
    batch_id: str
    custom_ids: list[str]
    purposes: dict[str, str]
    submitted_at: float


class BatchLLM:
    """`complete_many` as one Batch API job (split at the per-file limit); `complete` is a batch of one.

    `client` is an `openai.OpenAI` or a callable returning one (shared with the direct adapter).
    """

    def __init__(
        self,
        client: OpenAI | Callable[[], OpenAI],
        *,
        completion_window: str = "24h",
        poll_interval_s: float = 10.0,
        token_param: str = "max_completion_tokens",
        max_wait_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self.completion_window = completion_window
        self.poll_interval_s = poll_interval_s
        self.token_param = token_param
        self.max_wait_s = max_wait_s
        self._sleep = sleep

    def client(self) -> OpenAI:
        return self._client() if callable(self._client) else self._client

    def complete(self, request: LLMRequest) -> LLMResponse:
        result = self.complete_many([request])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMResponse | Exception]:
        if not requests:
            return []
        run = uuid.uuid4().hex[:12]
        custom_ids = [f"{run}-{i}" for i in range(len(requests))]
        chunks = [
            (custom_ids[i : i + MAX_REQUESTS_PER_BATCH], requests[i : i + MAX_REQUESTS_PER_BATCH])
            for i in range(0, len(requests), MAX_REQUESTS_PER_BATCH)
        ]
        submitted = [self.submit(ids, reqs) for ids, reqs in chunks]
        by_id: dict[str, LLMResponse | Exception] = {}
        for job in submitted:
            by_id.update(self.collect(job))
        return [by_id[cid] for cid in custom_ids]

    def input_lines(self, custom_ids: Sequence[str], requests: Sequence[LLMRequest]) -> list[dict[str, Any]]:
        """The JSONL lines of a batch: one POST to the chat endpoint per request, the direct body."""
        return [
            {
                "custom_id": cid,
                "method": "POST",
                "url": ENDPOINT,
                "body": chat_completion_body(request, token_param=self.token_param),
            }
            for cid, request in zip(custom_ids, requests, strict=True)
        ]

    def submit(self, custom_ids: list[str], requests: Sequence[LLMRequest]) -> _Submitted:
        """Upload the input file and create the batch."""
        lines = self.input_lines(custom_ids, requests)
        data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()
        client = self.client()
        uploaded = client.files.create(
            file=("worldmm-batch.jsonl", data, "application/jsonl"), purpose="batch"
        )
        batch = client.batches.create(
            input_file_id=uploaded.id,
            endpoint=ENDPOINT,
            completion_window=self.completion_window,  # type: ignore[arg-type]
            metadata={"source": "worldmm", "requests": str(len(lines))},
        )
        logger.info("llm_batch_submitted", extra={"batch_id": batch.id, "requests": len(lines)})
        return _Submitted(
            batch_id=batch.id,
            custom_ids=list(custom_ids),
            purposes={cid: r.purpose for cid, r in zip(custom_ids, requests, strict=True)},
            submitted_at=time.perf_counter(),
        )

    def wait(self, batch_id: str, max_wait_s: float | None = None) -> Any:
        """Poll the batch every `poll_interval_s` until it reaches a terminal status (or the wait limit)."""
        client = self.client()
        limit = self.max_wait_s if max_wait_s is None else max_wait_s
        started = time.monotonic()
        while True:
            batch = client.batches.retrieve(batch_id)
            if batch.status in TERMINAL_STATUSES:
                return batch
            if limit is not None and time.monotonic() - started > limit:
                raise BatchTimeoutError(f"batch {batch_id} still {batch.status} after {limit}s")
            self._sleep(self.poll_interval_s)

    def collect(self, job: _Submitted, max_wait_s: float | None = None) -> dict[str, LLMResponse | Exception]:
        """Wait for `job` and map its output and error files back to its custom ids."""
        batch = self.wait(job.batch_id, max_wait_s)
        latency_ms = (time.perf_counter() - job.submitted_at) * 1000
        client = self.client()
        results: dict[str, LLMResponse | Exception] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = client.files.content(file_id).text
            for raw in content.splitlines():
                if raw.strip():
                    line = json.loads(raw)
                    cid = str(line.get("custom_id"))
                    if cid in job.purposes:
                        results[cid] = _line_result(line, latency_ms)
        _delete_files(client, job.batch_id, batch.input_file_id, batch.output_file_id, batch.error_file_id)
        reason = _batch_failure_reason(batch)
        for cid in job.custom_ids:
            if cid not in results:
                results[cid] = BatchRequestError(
                    f"batch {job.batch_id} {batch.status}: no result for {job.purposes[cid]} ({reason})",
                    custom_id=cid,
                )
        failed = sum(isinstance(r, Exception) for r in results.values())
        logger.info(
            "llm_batch_done",
            extra={
                "batch_id": job.batch_id,
                "status": batch.status,
                "requests": len(job.custom_ids),
                "failed": failed,
            },
        )
        return results


def _delete_files(client: OpenAI, batch_id: str, *file_ids: str | None) -> None:
    """Delete a finished batch's input, output and error files: they hold transcripts and captions, and
    forget-me cannot reach them at the provider. A file that cannot be deleted is logged, never fatal."""
    for file_id in file_ids:
        if not file_id:
            continue
        try:
            client.files.delete(file_id)
        except Exception as exc:  # the results are already read; the provider's retention is the backstop
            logger.warning(
                "llm_batch_file_not_deleted",
                extra={"batch_id": batch_id, "file_id": file_id, "error": type(exc).__name__},
            )


def _line_result(line: dict[str, Any], latency_ms: float) -> LLMResponse | Exception:
    cid = str(line.get("custom_id"))
    error = line.get("error")
    if error:
        return BatchRequestError(f"{error.get('code')}: {error.get('message')}", custom_id=cid)
    response = line.get("response") or {}
    status = int(response.get("status_code") or 0)
    body = response.get("body") or {}
    if status != 200:
        message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
        return BatchRequestError(f"status {status}: {message or body}", custom_id=cid, status=status)
    try:
        answer = response_from_body(body, latency_ms=latency_ms)
    except ModelOutputError as exc:
        return exc
    if answer.truncated:  # a fragment is never a result (CollectingBatchLLM asks again directly, with room)
        return TruncatedOutputError(f"batch answer for {cid} was cut off at the output limit")
    return answer


def _batch_failure_reason(batch: Any) -> str:
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) or []
    messages = [f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}" for e in data]
    return "; ".join(messages) or "no output line"


class CollectingBatchLLM:
    """Gathers concurrent requests (a backfill's windows, one per thread) into shared Batch API jobs.

    The pipeline's code is sequential per window; run many windows on threads and each stage's calls
    (every window's caption, then every window's NER, ...) meet here and go out as one job. A group is
    submitted when it holds `max_requests` or `linger_s` after its first request. A job still running
    `deadline_s` after submission is cancelled and its requests are answered by direct calls, so a
    backfill never waits longer than the deadline on the Batch API.
    """

    def __init__(
        self,
        direct: LLM,
        batch: BatchLLM,
        *,
        max_requests: int = 256,
        linger_s: float = 2.0,
        deadline_s: float = 3600.0,
    ) -> None:
        self.direct = direct
        self.batch = batch
        self.max_requests = max(1, min(max_requests, MAX_REQUESTS_PER_BATCH))
        self.linger_s = linger_s
        self.deadline_s = deadline_s
        self.job_sizes: list[int] = []  # requests per submitted job (logs, tests)
        self.fallbacks = 0  # requests answered directly because their job missed the deadline
        self._pending: list[tuple[LLMRequest, Future[LLMResponse]]] = []
        self._cond = threading.Condition()
        self._dispatcher: threading.Thread | None = None

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self._enqueue([request])[0].result()

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMResponse | Exception]:
        results: list[LLMResponse | Exception] = []
        for future in self._enqueue(requests):
            try:
                results.append(future.result())
            except Exception as exc:  # a failed request is a result in its place, as in BatchLLM
                results.append(exc)
        return results

    def _enqueue(self, requests: Sequence[LLMRequest]) -> list[Future[LLMResponse]]:
        futures: list[Future[LLMResponse]] = [Future() for _ in requests]
        with self._cond:
            self._pending.extend(zip(requests, futures, strict=True))
            if self._dispatcher is None or not self._dispatcher.is_alive():
                self._dispatcher = threading.Thread(target=self._dispatch, name="llm-batch", daemon=True)
                self._dispatcher.start()
            self._cond.notify_all()
        return futures

    def _dispatch(self) -> None:
        while True:
            with self._cond:
                if not self._pending:
                    self._cond.wait(timeout=60.0)
                    if not self._pending:
                        self._dispatcher = None
                        return
                closes_at = time.monotonic() + self.linger_s
                while len(self._pending) < self.max_requests and (left := closes_at - time.monotonic()) > 0:
                    self._cond.wait(timeout=left)
                group = self._pending[: self.max_requests]
                del self._pending[: self.max_requests]
            threading.Thread(target=self._run, args=(group,), name="llm-batch-job", daemon=True).start()

    def _run(self, group: list[tuple[LLMRequest, Future[LLMResponse]]]) -> None:
        requests = [request for request, _ in group]
        results: dict[int, LLMResponse | Exception] = {}
        job: _Submitted | None = None
        try:
            run = uuid.uuid4().hex[:12]
            job = self.batch.submit([f"{run}-{i}" for i in range(len(requests))], requests)
            self.job_sizes.append(len(requests))
            by_id = self.batch.collect(job, max_wait_s=self.deadline_s)
            results = {i: by_id[cid] for i, cid in enumerate(job.custom_ids)}
        except BatchTimeoutError as exc:
            logger.warning("llm_batch_deadline_passed", extra={"requests": len(requests), "error": str(exc)})
            if job is not None:
                self._cancel(job.batch_id)
        except Exception as exc:  # the Batch API itself failed: the backfill still goes on, directly
            logger.warning("llm_batch_failed", extra={"requests": len(requests), "error": str(exc)})
        # Requests without a result, and answers cut off by the token limit: directly (with more room).
        missing = [
            i for i in range(len(requests)) if i not in results or isinstance(results[i], TruncatedOutputError)
        ]
        if missing:
            self.fallbacks += len(missing)
            answers = self.direct.complete_many([requests[i] for i in missing])
            results.update(zip(missing, answers, strict=True))
        for i, (_, future) in enumerate(group):
            result = results[i]
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)

    def _cancel(self, batch_id: str) -> None:
        try:
            self.batch.client().batches.cancel(batch_id)
        except Exception as exc:  # it expires on its own; nothing waits on it any more
            logger.warning("llm_batch_cancel_failed", extra={"batch_id": batch_id, "error": str(exc)})


def build_backfill_llm(settings: Settings, live: LLM) -> LLM:
    """The LLM for backfills (ingest_session): with LLM_MODE=batch, extraction requests from many
    windows share Batch jobs (with a deadline, then direct); interactive purposes stay direct."""
    if settings.llm_mode != LLMMode.BATCH or not isinstance(live, OpenAILLM):
        return live
    batch = BatchLLM(
        live.client,
        completion_window=settings.batch_completion_window,
        poll_interval_s=settings.batch_poll_interval_s,
        token_param=live.token_param,
    )
    collecting = CollectingBatchLLM(
        live,
        batch,
        max_requests=settings.batch_max_requests,
        linger_s=settings.batch_linger_s,
        deadline_s=settings.batch_deadline_s,
    )
    return DispatchingLLM(live, collecting, frozenset(settings.llm_direct_purposes))
