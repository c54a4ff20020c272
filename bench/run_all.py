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
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

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
}
ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", choices=sorted(BENCHES), default=None)
    args = parser.parse_args()
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.only or BENCHES:
        print(f"== {name}", flush=True)
        result = subprocess.run([sys.executable, *BENCHES[name]], cwd=ROOT, capture_output=True, text=True)
        lines = [line for line in result.stdout.splitlines() if line.strip().startswith("{")]
        if result.returncode != 0 or not lines:
            failed.append(name)
            print(result.stderr[-2000:], file=sys.stderr)
            continue
        (out / f"{name}.json").write_text(lines[-1] + "\n")
        print(json.dumps(json.loads(lines[-1]), indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
