"""Powertools Metrics for every function: one EMF namespace (POWERTOOLS_METRICS_NAMESPACE), published
by `log_metrics` on each handler. Library code only counts. On the local profile nothing is recorded
(no namespace, and the CLI's output stays free of EMF lines)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

metrics = Metrics()

Handler = TypeVar("Handler", bound=Callable[..., Any])


def recording() -> bool:
    """Whether metrics are recorded in this process (the aws profile)."""
    from worldmm.config import Profile, get_settings

    return get_settings().worldmm_profile == Profile.AWS


def count(name: str, value: float = 1) -> None:
    """Add to a count metric of this invocation (e.g. WindowsIngested, SummaryFailed)."""
    if recording():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def milliseconds(name: str, value: float) -> None:
    """Record a latency of this invocation in milliseconds (e.g. ChatLatency)."""
    if recording():
        metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=value)


def log_metrics(handler: Handler) -> Handler:
    """Publish the invocation's metrics (and a ColdStart count) when the handler returns or raises."""
    published = metrics.log_metrics(handler, capture_cold_start_metric=True)

    @functools.wraps(handler)
    def run(event: Any, context: Any) -> Any:
        if recording():
            return published(event, context)
        return handler(event, context)

    return run  # type: ignore[return-value]


class timed:
    """`with timed("ChatLatency"):` records the block's wall time in milliseconds."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> timed:
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        milliseconds(self.name, (time.perf_counter() - self._started) * 1000)
