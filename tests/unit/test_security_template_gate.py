"""template.yaml under the checkov gate (issue 64, Build 5): no finding without a written reason, async
functions keep their failures, and the functions that open database connections cannot open more than the
connection budget of docs/cost.md ("Connections at scale")."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.template import load_template

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".tools" / "checkov" / "bin" / "checkov"
MAX_CONNECTIONS = 1_800
"""db.r6g.large's default max_connections (docs/cost.md): the smallest instance the cost model deploys."""
OPERATOR_SHARE = 0.10
"""Connections kept for migrations, operators and the proxy's own."""


def _functions() -> dict[str, dict[str, Any]]:
    resources: dict[str, Any] = load_template()["Resources"]
    return {n: r["Properties"] for n, r in resources.items() if r["Type"] == "AWS::Serverless::Function"}


def _connections_per_container(props: dict[str, Any]) -> int:
    variables = load_template()["Globals"]["Function"]["Environment"]["Variables"]
    merged = {**variables, **(props.get("Environment") or {}).get("Variables", {})}
    return int(merged["DATABASE_POOL_SIZE"]) + int(merged["DATABASE_MAX_OVERFLOW"])


def test_security_database_functions_reserve_concurrency_within_the_connection_budget_fails_on_todays_code() -> None:
    # GIVEN every function that connects to PostgreSQL
    database = {n: p for n, p in _functions().items() if "DATABASE_SECRET_ARN" in (p.get("Environment") or {}).get(
        "Variables", {}
    )}
    assert len(database) >= 10
    # THEN each has reserved concurrency, and all of them at once open no more than the budget
    missing = [n for n, p in database.items() if "ReservedConcurrentExecutions" not in p]
    assert not missing, missing
    peak = sum(p["ReservedConcurrentExecutions"] * _connections_per_container(p) for p in database.values())
    assert peak <= MAX_CONNECTIONS * (1 - OPERATOR_SHARE), peak


def test_security_every_asynchronous_function_keeps_its_failures_fails_on_todays_code() -> None:
    # GIVEN the functions nothing calls synchronously (async invokes and schedules; not HTTP, not SQS sources)
    for name, props in _functions().items():
        kinds = {e["Type"] for e in (props.get("Events") or {}).values()}
        if kinds & {"HttpApi", "SQS"}:
            continue
        # THEN a failed run lands somewhere: an OnFailure destination or a dead-letter queue
        on_failure = ((props.get("EventInvokeConfig") or {}).get("DestinationConfig") or {}).get("OnFailure")
        assert on_failure or props.get("DeadLetterQueue"), name


def test_security_every_checkov_skip_in_the_template_gives_its_reason() -> None:
    skips = re.findall(r"checkov:skip=(CKV\w+)(.*)", (ROOT / "template.yaml").read_text())
    assert skips
    for check, reason in skips:
        assert reason.startswith(": ") and len(reason) > 40, (check, reason)


def test_security_checkov_finds_nothing_unexplained_in_the_template() -> None:
    done = subprocess.run(
        [str(CHECKOV), "-f", "template.yaml", "--compact", "--quiet", "--skip-download", "-o", "cli"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "BC_SKIP_MAPPING": "TRUE"},
    )
    assert done.returncode == 0, done.stdout[-4000:]
    assert "Failed checks: 0" in done.stdout
