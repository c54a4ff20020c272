"""Powertools Metrics for every function: one EMF namespace (POWERTOOLS_METRICS_NAMESPACE), flushed by
`@metrics.log_metrics` on each handler. Library code only counts; it never flushes."""

from __future__ import annotations

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

metrics = Metrics()


def count(name: str, value: float = 1) -> None:
    """Add to a count metric of this invocation (e.g. WindowsIngested, SummaryFailed)."""
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def milliseconds(name: str, value: float) -> None:
    """Record a latency of this invocation in milliseconds (e.g. ChatLatency)."""
    metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=value)
