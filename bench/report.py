"""What benchmarks report alike: latency as p50, p95 (nearest rank) and max in milliseconds, the machine, the
JSON result printed and kept."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def latency_summary(samples_ms: list[float], digits: int = 2) -> dict[str, float]:
    """p50, p95 and max of `samples_ms`."""
    ordered = sorted(samples_ms)
    return {
        "p50_ms": round(statistics.median(ordered), digits),
        "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], digits),
        "max_ms": round(ordered[-1], digits),
    }


def time_calls(fn: Callable[[], Any], calls: int) -> dict[str, float]:
    """Call `fn` once to warm it, then `calls` times, and summarise the timings."""
    fn()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return latency_summary(samples)


def machine() -> dict[str, Any]:
    """The machine a result was measured on."""
    return {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()}


def write_result(result: dict[str, Any], out: Path) -> None:
    """Print the result and keep it as JSON at `out`."""
    text = json.dumps(result, indent=2)
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
