"""Runs every benchmark in turn and writes each one's JSON to bench/results/<name>.json.

    python -m bench.run_all [--only ppr retrieval ...]

Each benchmark reports its figures beside the baseline measured in the same run, with the machine and its
load average. Goals (issue 16 and earlier): ingest window p50 ≤ 25 ms; ingest_session concurrent ≤ serial / 8;
PPR at the ranking tolerance ≥ 50× the per-query igraph rebuild + prpack at 1M edges with the same top-50
(10k / 100k / 1M edges reported), snapshot load vs the previous .npz; retrieval at 1536-d and 384-d, 90 days:
warm p95 ≤ 100 ms, a fresh interpreter (imports + graph snapshots + first query) ≤ 500 ms; per-user vector
search plans (global HNSW + iterative scan, exact user rows, partitioned HNSW): p95 and recall@10; a simulated
week against the GPU controller: GPU hours billed <= 1.3 x hours worn + 15 min per session (always-on: 168 h);
one wearer-hour through the deployed functions, priced with bench/prices.json; server connections of N
concurrent containers; graph-cache hit rate against Redis memory under LRU (issue 28, docs/cost.md).

bench/results/ is not committed, except bench/results/summary.json: per benchmark, its latest run's date,
machine, load and headline figures (the report's scalar values), updated here after each run. Entries
whose `source` names a document were transcribed from the run logs before this file existed.
docs/performance.md holds one table per benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCHES = {
    "ingest_window": ["-m", "bench.bench_ingest_window"],
    "ingest_session": ["-m", "bench.bench_ingest_session"],
    "ppr": ["-m", "bench.bench_ppr"],
    "retrieval": ["-m", "bench.bench_retrieval", "--data-dir", ".worldmm/bench-data"],
    "vector_search": ["-m", "bench.bench_vector_search"],
    "chat_latency": ["-m", "bench.bench_chat_latency", "--model-latency", "1.5"],
    "local_adapters": ["-m", "bench.bench_local_adapters"],
    "handler_imports": ["-m", "bench.bench_handler_imports"],
    "gpu_worker_tiny": ["bench/bench_gpu_worker.py", "--tiny", "--clips", "8"],
    "gpu_schedule": ["-m", "bench.bench_gpu_schedule"],
    "answers": ["-m", "bench.bench_answers"],
    "cost": ["-m", "bench.bench_cost", "--redis"],
    "connections": ["-m", "bench.bench_connections"],
    "redis_lru": ["-m", "bench.bench_redis_lru"],
    "page": ["-m", "bench.bench_page"],
    "events": ["-m", "bench.bench_events"],
}
ROOT = Path(__file__).resolve().parent.parent
SUMMARY = ROOT / "bench" / "results" / "summary.json"
MAX_FIGURES = 80
"""Scalar values kept per benchmark in the summary (the full report stays in bench/results/<name>.json)."""


def machine() -> dict[str, Any]:
    """The host a run was measured on: CPU model, cores and load average (the figures depend on all three)."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        lines = cpuinfo.read_text().splitlines()
        names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
        model = names[0] if names else model
    return {"cpu": model, "cores": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()]}


def figures(report: Any, prefix: str = "") -> dict[str, Any]:
    """The report's scalar values (and short lists of them) by dotted path, at most MAX_FIGURES."""
    found: dict[str, Any] = {}
    if isinstance(report, dict):
        for key, value in report.items():
            for path, leaf in figures(value, f"{prefix}{key}.").items():
                if len(found) < MAX_FIGURES:
                    found[path] = leaf
    elif isinstance(report, list):
        if len(report) <= 4 and all(isinstance(v, int | float | bool | str) for v in report):
            found[prefix.rstrip(".")] = report
    elif isinstance(report, int | float | bool) or (isinstance(report, str) and len(report) <= 80):
        found[prefix.rstrip(".")] = report
    return found


def record_summary(name: str, report: dict[str, Any], host: dict[str, Any]) -> None:
    """Replace `name`'s entry in bench/results/summary.json with this run."""
    summary = json.loads(SUMMARY.read_text()) if SUMMARY.exists() else {}
    summary[name] = {
        "source": "bench/run_all.py",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": host,
        "command": "python " + " ".join(BENCHES[name]),
        "figures": figures(report),
    }
    SUMMARY.write_text(json.dumps(dict(sorted(summary.items())), indent=2, ensure_ascii=False) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", choices=sorted(BENCHES), default=None)
    args = parser.parse_args()
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.only or BENCHES:
        print(f"== {name}", flush=True)
        host = machine()
        result = subprocess.run([sys.executable, *BENCHES[name]], cwd=ROOT, capture_output=True, text=True)
        lines = [line for line in result.stdout.splitlines() if line.strip().startswith("{")]
        if result.returncode != 0 or not lines:
            failed.append(name)
            print(result.stderr[-2000:], file=sys.stderr)
            continue
        (out / f"{name}.json").write_text(lines[-1] + "\n")
        record_summary(name, json.loads(lines[-1]), host)
        print(json.dumps(json.loads(lines[-1]), indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
