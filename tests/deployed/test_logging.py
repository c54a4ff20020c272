"""What a deployed function logs: every line JSON, under the service template.yaml names, whatever the import order.

Each function's handler module is imported in a fresh interpreter with exactly the environment the template
gives it (tests/deployed/log_probe.py); every library logger it loaded, and two it did not, write one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.deployed.stack import DeployedStack

pytestmark = pytest.mark.integration

PROBE = Path(__file__).with_name("log_probe.py")
LATER = ("worldmm.ingest.window", "worldmm.retrieval.loop")
"""Library modules imported after the handler's Logger() exists, when the handler did not import them first."""


def test_every_function_logs_library_lines_as_json_under_its_template_service(stack: DeployedStack) -> None:
    failures = []
    for function, props in sorted(stack.functions().items()):
        # GIVEN the function's handler module imported as the runtime imports it, with the template's env
        env = stack.lambda_env(function)
        service = env["POWERTOOLS_SERVICE_NAME"]
        module = props["Handler"].rsplit(".", 1)[0]
        with tempfile.TemporaryDirectory(prefix="worldmm-logprobe-") as tmp:
            proc = subprocess.run(
                [sys.executable, str(PROBE), module, *LATER], env=env, cwd=tmp, capture_output=True, text=True,
                timeout=300,
            )
        assert proc.returncode == 0, f"{function}:\n{proc.stderr[-4000:]}"
        summary = json.loads(proc.stderr.strip().splitlines()[-1])
        # WHEN each library logger writes one line
        lines = proc.stdout.splitlines()
        records = [json.loads(line) for line in lines if line.startswith("{")]
        probes = {r.get("probe"): r for r in records if r.get("message") == "probe"}
        # THEN the handler's logger is the template's service, and every line is JSON under that service with
        # the shape Powertools gives it; none reaches the runtime's plain-text root handler
        if summary["handler_service"] != service:
            failures.append(f"{function}: handler logs as {summary['handler_service']!r}, template says {service!r}")
        if plain := [line for line in lines if not line.startswith("{")]:
            failures.append(f"{function}: unstructured lines {plain[:3]}")
        if set(probes) != set(summary["probed"]) or not set(LATER) <= set(probes):
            failures.append(f"{function}: probed {summary['probed']}, JSON lines for {sorted(map(str, probes))}")
        for name, record in probes.items():
            shape = {"level", "location", "message", "timestamp", "service"} <= set(record)
            if record.get("service") != service or record.get("level") != "INFO" or not shape:
                failures.append(f"{function}: {name} logged {record}")
    assert not failures, "\n".join(failures)
