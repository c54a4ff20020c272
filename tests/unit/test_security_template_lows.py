"""Issue 64, Lows in template.yaml: the GPU controller launches only the worker, and API access logs name no
user (forget-me cannot reach them)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.template import load_template

pytestmark = pytest.mark.unit


def _run_instances_statements() -> list[dict[str, Any]]:
    props = load_template()["Resources"]["GpuControllerFunction"]["Properties"]
    statements = [s for p in props["Policies"] if isinstance(p, dict) for s in p.get("Statement", [])]
    return [s for s in statements if s.get("Action") == "ec2:RunInstances"]


def _resources(statement: dict[str, Any]) -> str:
    return json.dumps(statement["Resource"])


def test_security_gpu_controller_launches_only_the_worker_template_image_and_type_fails_on_todays_code() -> None:
    statements = _run_instances_statements()
    assert statements
    for statement in statements:
        text = _resources(statement)
        # no launch template or image but the worker's
        assert "launch-template/*" not in text and "image/*" not in text, text
        # an instance only of the worker's type
        if "instance/*" in text:
            assert statement["Condition"]["StringEquals"]["ec2:InstanceType"] == {"Ref": "GpuInstanceType"}
    launched = " ".join(_resources(s) for s in statements)
    assert "GpuWorkerLaunchTemplate" in launched and "GpuWorkerAmiId" in launched


def test_security_api_access_logs_hold_no_user_id_fails_on_todays_code() -> None:
    api = load_template()["Resources"]["HttpApi"]["Properties"]
    log_format = api["AccessLogSettings"]["Format"]
    assert "claims.sub" not in log_format and "sub" not in json.loads(log_format)
