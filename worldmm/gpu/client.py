"""HTTP client of the GPU worker: timeouts, retries on transient failures, typed errors.

Unreachable, timed out or 5xx → GpuUnavailableError (retry later: the DLQ path of spec 000, the
graceful degradation of spec 001); 4xx → GpuRequestError (the request itself is wrong).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
from aws_lambda_powertools import Logger

from worldmm.errors import GpuRequestError, GpuUnavailableError
from worldmm.gpu.settings import GpuClientSettings
from worldmm.worker_signing import UnsignedWorkerResponse, WorkerSigner

logger = Logger(child=True)

TRANSIENT_STATUS = frozenset({502, 503, 504})
# Discovery answers this address when no GPU instance runs (spec 000 step 8).
UNROUTABLE_HOSTS = frozenset({"0.0.0.0", ""})


def _timeout(settings: GpuClientSettings, read_s: float | None = None) -> httpx.Timeout:
    read = settings.gpu_read_timeout_s if read_s is None else read_s
    return httpx.Timeout(connect=settings.gpu_connect_timeout_s, read=read, write=read, pool=read)


def worker_signer(settings: GpuClientSettings) -> WorkerSigner:
    """Signs requests with the worker key and checks the worker's signature on each answer (the key is fetched
    when the worker is first called, never sent)."""
    return WorkerSigner(settings.gpu_worker_key)


def _check_url(base_url: str | None) -> str:
    if not base_url:
        raise GpuUnavailableError("no GPU worker available", sentinel="none")
    url = httpx.URL(base_url)
    if url.host in UNROUTABLE_HOSTS:
        raise GpuUnavailableError(f"no GPU worker available ({base_url})", sentinel=url.host or "none")
    return base_url.rstrip("/")


class GpuWorkerClient:
    """Calls the worker at the URL `base_url_provider` gives now (discovery can move it between calls)."""

    def __init__(
        self,
        base_url_provider: Callable[[], str | None],
        settings: GpuClientSettings,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._base_url_provider = base_url_provider
        self.settings = settings
        self._transport = transport
        self._sleep = sleep
        self._client: httpx.Client | None = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(
                timeout=_timeout(self.settings), auth=worker_signer(self.settings), transport=self._transport
            )
        return self._client

    def close(self) -> None:
        """Close pooled connections."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def post_json(self, path: str, payload: dict[str, Any], *, read_timeout_s: float | None = None) -> Any:
        """POST `payload` to `path` and return the decoded JSON answer (raises the typed GPU errors)."""
        base = _check_url(self._base_url_provider())
        url = f"{base}{path}"
        attempts = self.settings.gpu_retries + 1
        timeout = _timeout(self.settings, read_timeout_s)
        last_reason = ""
        for attempt in range(attempts):
            if attempt:
                self._sleep(min(0.5 * 2 ** (attempt - 1), 4.0))
            try:
                response = self._http().post(url, json=payload, timeout=timeout)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
                last_reason = f"{type(exc).__name__}: {exc}"
                logger.warning("gpu worker unreachable", extra={"url": url, "attempt": attempt + 1})
                continue
            except httpx.TimeoutException as exc:
                raise GpuUnavailableError(f"GPU worker timed out on {path}: {type(exc).__name__}") from exc
            except UnsignedWorkerResponse as exc:
                # Nothing an unsigned answer says is used: a refusal stays a refusal, anything else is not ours.
                if exc.status >= 500:
                    raise GpuUnavailableError(f"GPU worker failed on {path}: {exc}") from exc
                raise GpuRequestError(f"GPU worker call rejected on {path}: {exc}") from exc
            except httpx.HTTPError as exc:
                raise GpuUnavailableError(f"GPU worker call failed on {path}: {exc}") from exc
            if response.status_code in TRANSIENT_STATUS:
                last_reason = f"HTTP {response.status_code}: {_detail(response)}"
                logger.warning(
                    "gpu worker transient error",
                    extra={"url": url, "status": response.status_code, "attempt": attempt + 1},
                )
                continue
            if response.status_code >= 500:
                raise GpuUnavailableError(f"GPU worker failed on {path}: HTTP {response.status_code}")
            if response.status_code >= 400:
                raise GpuRequestError(f"GPU worker rejected {path}: HTTP {response.status_code}: {_detail(response)}")
            try:
                return response.json()
            except ValueError as exc:
                raise GpuUnavailableError(f"GPU worker sent a non-JSON answer on {path}") from exc
        raise GpuUnavailableError(f"GPU worker unavailable after {attempts} attempts on {path}: {last_reason}")


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])[:200]
    return str(body)[:200]


def worker_health(base_url: str | None, settings: GpuClientSettings) -> dict[str, Any]:
    """The worker's /health answer ({"status": "loading"|"ready"|"failed", "models": {...}}).

    Raises GpuUnavailableError when it cannot be asked (no URL, unreachable, timeout, non-2xx).
    """
    base = _check_url(base_url)
    try:
        response = httpx.get(f"{base}/health", timeout=_timeout(settings))
    except httpx.HTTPError as exc:
        raise GpuUnavailableError(f"GPU worker health check failed: {type(exc).__name__}") from exc
    if response.status_code != 200:
        raise GpuUnavailableError(f"GPU worker health check answered HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError as exc:
        raise GpuUnavailableError("GPU worker health check sent a non-JSON answer") from exc
    if not isinstance(body, dict):
        raise GpuUnavailableError("GPU worker health check sent an unexpected answer")
    return body


def worker_ready(base_url: str | None, settings: GpuClientSettings) -> bool:
    """True only when the worker answers and its models are loaded (spec 004's `chat.gpu-starting` test)."""
    try:
        return worker_health(base_url, settings).get("status") == "ready"
    except GpuUnavailableError:
        return False
