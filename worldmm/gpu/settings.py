"""The settings a caller of the GPU worker reads: how long to wait for it, how often to try again, and the key its
requests and answers are signed with (fetched when the worker is first called)."""

from __future__ import annotations

from collections.abc import Callable

from worldmm.config import ComponentSettings


class GpuClientSettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    gpu_connect_timeout_s: float
    gpu_read_timeout_s: float
    gpu_retries: int
    gpu_worker_key: Callable[[], str | None]
