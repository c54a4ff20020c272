"""One Lambda container for `bench.bench_connections`: cold start, then warm requests, then idle.

Usage: connection_container.py MODULE HANDLER EVENTS_JSON [--snapstart]. Run with the function's environment only
(`DeployedStack.lambda_env`). Invokes the handler once per event in turn (the first a cold start), prints one
JSON line with each outcome and the time spent importing the handler (init) and in each request, then keeps
its process and its connection pool, as an idle container does between requests, until its stdin closes.
`--snapstart` runs worldmm/snapstart.py's hooks between init and the first request, as a restore would.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "deployed"))

from runner import Context  # the Lambda context the deployed tests use


def _outcome(result: Any) -> str:
    if isinstance(result, dict):
        return str(result.get("status", result.get("statusCode", "?")))
    return type(result).__name__


def main() -> None:
    module_name, handler_name, events_path = sys.argv[1:4]
    snapstart = "--snapstart" in sys.argv[4:]
    started = time.perf_counter()
    handler = getattr(importlib.import_module(module_name), handler_name)
    if snapstart:  # as Lambda publishes a SnapStart version: init, the before-snapshot hook, a restore
        from worldmm import snapstart as hooks

        hooks.before_snapshot()
    import_s = time.perf_counter() - started  # init: what a SnapStart snapshot holds
    modules_at_init = set(sys.modules)
    if snapstart:
        hooks.after_restore()
    outcomes, invoke_s = [], []
    for event in json.loads(Path(events_path).read_text()):
        started = time.perf_counter()
        try:
            outcomes.append(_outcome(handler(event, Context())))
        except Exception as exc:  # reported in the bench's JSON, which the test asserts on
            outcomes.append(f"{type(exc).__name__}: {exc}")
        invoke_s.append(round(time.perf_counter() - started, 4))
        if len(invoke_s) == 1:
            first_request_modules = len(set(sys.modules) - modules_at_init)
    report = {
        "outcomes": outcomes,
        "import_s": round(import_s, 4),
        "invoke_s": invoke_s,
        "modules_at_init": len(modules_at_init),
        "modules_imported_by_first_request": first_request_modules,
    }
    print(json.dumps(report), flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main()
