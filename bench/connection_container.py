"""One Lambda container for `bench.bench_connections`: cold start, then warm requests, then idle.

Usage: connection_container.py MODULE HANDLER EVENTS_JSON. Run with the function's environment only
(`DeployedStack.lambda_env`). Invokes the handler once per event in turn (the first a cold start), prints one
JSON line with each outcome, then keeps its process and its connection pool, as an idle container does
between requests, until its stdin closes.
"""

from __future__ import annotations

import importlib
import json
import sys
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
    handler = getattr(importlib.import_module(module_name), handler_name)
    outcomes = []
    for event in json.loads(Path(events_path).read_text()):
        try:
            outcomes.append(_outcome(handler(event, Context())))
        except Exception as exc:  # reported in the bench's JSON, which the test asserts on
            outcomes.append(f"{type(exc).__name__}: {exc}")
    print(json.dumps({"outcomes": outcomes}), flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main()
