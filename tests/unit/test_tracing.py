"""The functions' X-Ray tracing patches the libraries they call out through, and only those."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from worldmm.observability import TRACED_LIBRARIES, installed_patches

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import handlers.http.memories.chat.app
from aws_xray_sdk.core import patcher
print(json.dumps({"patched": sorted(patcher._PATCHED_MODULES), "imported": sorted(
    name for name in ("requests", "sqlite3") if name in sys.modules)}))
"""


def test_chat_handler_in_lambda_patches_only_the_traced_libraries() -> None:
    # LAMBDA_TASK_ROOT is what the Lambda runtime sets: with it Powertools enables the Tracer and patches.
    env = {**os.environ, "LAMBDA_TASK_ROOT": str(ROOT), "POWERTOOLS_TRACE_DISABLED": "false"}
    child = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    found = json.loads(child.stdout.strip().splitlines()[-1])
    assert found["patched"] == sorted(TRACED_LIBRARIES)
    # Tracer() with no list imported these on every cold start; nothing in the functions uses them.
    assert found["imported"] == []


def test_a_package_without_a_traced_library_is_not_asked_to_patch_it() -> None:
    # The capture functions' packages hold neither httpx nor SQLAlchemy; X-Ray raises on a missing one.
    libraries = {"botocore": "botocore", "httpx": "worldmm_no_such_library"}
    assert installed_patches(libraries) == ("botocore",)
