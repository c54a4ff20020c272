"""GpuControllerFunction (issue 24) cold-started with exactly its template environment: it reads SSM, EC2,
its control table, the DLQ registry and the capture buffer, and reads no setting the template does not give."""

from __future__ import annotations

import pytest

from tests.deployed.settings_contract import settings_missing_from_template
from tests.deployed.stack import DeployedStack

pytestmark = pytest.mark.integration


def test_gpu_controller_function_runs_on_its_template_environment(stack: DeployedStack) -> None:
    # WHEN an operator asks for the status, and the schedule runs it with nothing waiting
    status = stack.invoke("GpuControllerFunction", {"action": "status"})
    scheduled = stack.invoke("GpuControllerFunction", {"source": "aws.scheduler"})
    # THEN it sees no worker, "none" in SSM and no work, and does nothing
    assert status.result["ssm"] == "none" and status.result["workWaiting"] is False
    assert scheduled.result["action"] == "idle"
    given = {"GpuControllerFunction": set(stack.environment("GpuControllerFunction"))}
    reads = {"GpuControllerFunction": stack.reads["GpuControllerFunction"]}
    assert settings_missing_from_template(reads, given) == {}
    # AND a malformed event is refused
    assert stack.invoke("GpuControllerFunction", {"action": "explode"}).result["statusCode"] == 400
