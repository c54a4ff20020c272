"""Operators' view of the GPU controller: `worldmm gpu status|start|stop` (and `sam remote invoke`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from worldmm.gpu.controller import GpuController


def run_controller(controller: GpuController, action: str) -> dict[str, Any]:
    """What GpuControllerFunction does for an operator's `action`, in this process."""
    if action == "status":
        return controller.status()
    if action == "stop":
        return controller.stop_now("operator").as_dict()
    controller.record_demand("operator")
    return controller.reconcile("operator").as_dict()


def invoke_controller(
    function_name: str, action: str, *, wait: bool = True, client: Any | None = None
) -> dict[str, Any]:
    """Invoke the deployed controller with `{"action": action}`: its answer, or `{"invoked": ...}` without wait."""
    if client is None:
        from worldmm.aws import aws_client

        client = aws_client("lambda", read_timeout=960.0)  # a start waits up to the function's 900 s
    response = client.invoke(
        FunctionName=function_name,
        InvocationType="RequestResponse" if wait else "Event",
        Payload=json.dumps({"action": action}).encode(),
    )
    if not wait:
        return {"invoked": function_name, "action": action, "status": response.get("StatusCode")}
    body = json.loads(response["Payload"].read() or b"null")
    if response.get("FunctionError"):
        raise RuntimeError(f"{function_name} failed: {body}")
    return dict(body) if isinstance(body, dict) else {"result": body}
