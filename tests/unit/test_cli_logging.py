"""Locally the CLI is the parent of the library's loggers: JSON lines on stderr, stdout left to the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """
import logging
from worldmm.cli import _local_logging
_local_logging(logging.WARNING)
from worldmm.ingest import window      # a library logger created after the parent
import handlers.http.memories.chat.app             # a handler's Logger() reuses the parent
window.logger.info("quiet")
window.logger.warning("loud", extra={"step": "probe"})
print("the command's output")
"""


def test_cli_library_lines_are_json_on_stderr_from_warning_up() -> None:
    # GIVEN a fresh interpreter without POWERTOOLS_SERVICE_NAME, as a local command runs
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "LAMBDA_", "AWS_LAMBDA"))}
    env["PYTHONPATH"] = str(ROOT)
    # WHEN the CLI's parent logger exists and a library module logs at info and at warning
    proc = subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # THEN stdout holds only the command's output, and stderr one JSON line: the warning, structured
    assert proc.stdout == "the command's output\n"
    lines = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    assert [(r["level"], r["message"], r["step"]) for r in lines] == [("WARNING", "loud", "probe")]
    assert lines[0]["service"] == "service_undefined"
