"""The settings of the GPU worker's callers (how long to wait for it, how often to try again, the key its requests
and answers are signed with, fetched when the worker is first called), and of its discovery and controller."""

from __future__ import annotations

from collections.abc import Callable

from worldmm.config import ComponentSettings


class GpuClientSettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    gpu_connect_timeout_s: float
    gpu_read_timeout_s: float
    gpu_retries: int
    gpu_worker_key: Callable[[], str | None]


class GpuSettings(GpuClientSettings):
    """The settings of the GPU worker's discovery and controller: where the worker's id is kept and how it is
    found, launched and stopped, and the work deferred while it starts; and, as a caller of it, the client's."""

    gpu_instance_param: str
    gpu_worker_tag: str
    gpu_worker_port: int
    gpu_launch_template: str | None
    gpu_control_table: str
    ingest_dlq_url: str | None
    # the controller's policy
    gpu_idle_stop_s: float
    gpu_chat_idle_stop_s: float
    gpu_ready_timeout_s: float
    gpu_controller_wait_s: float
    gpu_poll_interval_s: float
    gpu_lease_s: float
    gpu_failure_backoff_s: float
