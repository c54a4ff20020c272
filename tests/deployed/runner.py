"""Cold-start one Lambda handler, as the python3.12 runtime does, and report which settings it read.

Usage: runner.py MODULE HANDLER EVENT_JSON RESULT_JSON. Run with the function's environment only; the
result file holds the handler's return value (or the exception) and the Settings fields read.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
import uuid
from typing import Any


class Context:
    """The attributes of the Lambda context object that handlers and Powertools read."""

    def __init__(self, timeout_s: float = 900.0) -> None:
        name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_name = name
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"))
        self.invoked_function_arn = f"arn:aws:lambda:{os.environ['AWS_REGION']}:123456789012:function:{name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _record_settings_reads() -> set[str]:
    """Every Settings field any code reads in this process (the environment names it depends on)."""
    from worldmm.config import Settings

    fields = set(Settings.model_fields)
    read: set[str] = set()
    original = Settings.__getattribute__

    def recording(self: Any, name: str) -> Any:
        if name in fields:
            read.add(name)
        return original(self, name)

    Settings.__getattribute__ = recording  # type: ignore[method-assign]
    return read


def main() -> None:
    module_name, handler_name, event_path, result_path = sys.argv[1:5]
    read = _record_settings_reads()
    outcome: dict[str, Any]
    try:
        handler = getattr(importlib.import_module(module_name), handler_name)
        with open(event_path) as f:
            event = json.load(f)
        started = time.monotonic()
        result = handler(event, Context())
        outcome = {"result": result, "handler_s": time.monotonic() - started}
    except BaseException as exc:  # reported to the test, which fails with the traceback
        outcome = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        print(traceback.format_exc(), file=sys.stderr)
    outcome["settings_read"] = sorted(name.upper() for name in read)
    with open(result_path, "w") as f:
        json.dump(outcome, f, default=str)


if __name__ == "__main__":
    main()
