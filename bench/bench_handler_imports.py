"""Cold-start import cost of every Lambda handler in template.yaml: CPU seconds in a fresh interpreter.

    python -m bench.bench_handler_imports

Goal: each handler imports in under 1 CPU second (best of three cold interpreters) with no model runtime.
Prints one JSON object.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.template import load_template

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 1.0
PROBE = """
import json, sys, time, importlib
cpu = time.process_time()
module_name, _, attr = sys.argv[1].rpartition(".")
getattr(importlib.import_module(module_name), attr)
print(json.dumps({"seconds": time.process_time() - cpu}))
"""


def handlers() -> list[str]:
    resources = load_template()["Resources"].values()
    return sorted({r["Properties"]["Handler"] for r in resources if r.get("Type") == "AWS::Serverless::Function"})


def cold_import_seconds(handler: str, runs: int = 3) -> float:
    """Best CPU seconds of `runs` fresh interpreters importing `handler` with the aws profile."""
    best = float("inf")
    for _ in range(runs):
        result = subprocess.run(
            [sys.executable, "-c", PROBE, handler], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
            # LAMBDA_TASK_ROOT, as the runtime sets it: Powertools' Tracer is on and patches its libraries.
            env={"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1", "WORLDMM_PROFILE": "aws",
                 "LAMBDA_TASK_ROOT": str(ROOT)},
        )
        best = min(best, float(json.loads(result.stdout.strip().splitlines()[-1])["seconds"]))
    return best


def main() -> None:
    seconds = {handler: round(cold_import_seconds(handler), 3) for handler in handlers()}
    print(json.dumps({
        "benchmark": "handler_imports",
        "goal_cpu_s": GOAL_S,
        "cpu_seconds": seconds,
        "over_goal": sorted(h for h, s in seconds.items() if s >= GOAL_S),
    }))


if __name__ == "__main__":
    main()
