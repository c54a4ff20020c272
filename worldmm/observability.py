"""Powertools Tracer and Metrics for every function (`@instrument` on each handler).

Metrics: one EMF namespace (POWERTOOLS_METRICS_NAMESPACE), published when the handler returns or
raises; library code only counts. On the local profile nothing is recorded (no namespace, and the
CLI's output stays free of EMF lines). Tracer: the handler's X-Ray subsegment (the template sets
`Tracing: Active`) and the calls the functions make through the libraries in `TRACED_LIBRARIES`;
Powertools disables it outside Lambda.
"""

from __future__ import annotations

import functools
import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aws_lambda_powertools import Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

# What the functions call out through — AWS (botocore), the model and GPU endpoints (httpx), PostgreSQL
# (SQLAlchemy) — as X-Ray patch name: library. Tracer() alone patches every library the X-Ray SDK knows,
# importing `requests` and `sqlite3` (which nothing here uses) and tracing botocore's HTTP twice
# (httplib) on each cold start.
TRACED_LIBRARIES = {"botocore": "botocore", "httpx": "httpx", "sqlalchemy_core": "sqlalchemy"}


def installed_patches(libraries: dict[str, str]) -> tuple[str, ...]:
    """The patches whose library this function's package holds: each package has only what it uses, and
    X-Ray fails the import when asked to patch a library that is missing."""
    return tuple(patch for patch, module in libraries.items() if importlib.util.find_spec(module) is not None)


metrics = Metrics()
tracer = Tracer(patch_modules=installed_patches(TRACED_LIBRARIES))

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


@dataclass(frozen=True)
class _Outcome:
    value: Any = None
    error: BaseException | None = None


def instrument(handler: Handler) -> Handler:
    """Trace the handler and publish the invocation's metrics (and a ColdStart count).

    The trace keeps timings, the handler's name and, when it raises, the exception's type as the `error`
    annotation — never what it returned nor the exception's message or stack: answers, chat pages, upload URLs
    and error text (a validation error quotes its input) are personal data, and X-Ray is a store forget-me
    cannot reach. The exception is raised again outside the traced call, unchanged."""

    @functools.wraps(handler)
    def contained(event: Any, context: Any) -> _Outcome:
        try:
            return _Outcome(value=handler(event, context))
        except Exception as exc:
            tracer.put_annotation(key="error", value=type(exc).__name__)
            return _Outcome(error=exc)

    traced = tracer.capture_lambda_handler(contained, capture_response=False, capture_error=False)
    published = metrics.log_metrics(traced, capture_cold_start_metric=True)

    @functools.wraps(handler)
    def run(event: Any, context: Any) -> Any:
        outcome: _Outcome = published(event, context) if recording() else traced(event, context)
        if outcome.error is not None:
            raise outcome.error
        return outcome.value

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
