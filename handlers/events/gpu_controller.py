"""GpuControllerFunction: the GPU worker on demand (worldmm.gpu.controller).

Events: the schedule (EventBridge, any payload without `action`) → one reconcile; `{"action": "reconcile",
"reason": R}` from ingest, the DLQ consumer or chat when they found the GPU down (R is recorded as demand
first); operators (`worldmm gpu ...`, `sam remote invoke GpuControllerFunction -e '{"action": "status"}'`):
`status`, `start` (demand + reconcile), `stop` (now).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from worldmm.gpu.operations import run_controller
from worldmm.observability import instrument
from worldmm.services import get_services

logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


class ControllerEvent(BaseModel):
    """What the function is asked to do; a scheduled event carries no `action` (a reconcile)."""

    model_config = ConfigDict(extra="ignore")

    action: Literal["reconcile", "start", "stop", "status"] = "reconcile"
    reason: str = Field(default="schedule", max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Parse → one controller call → the outcome as a dict; a malformed event is a 400."""
    try:
        parsed = ControllerEvent.model_validate(event if isinstance(event, dict) else {})
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors(include_url=False)})
        return {"statusCode": 400, "body": json.dumps({"error": "invalid controller event", "fields": fields})}
    controller = get_services().gpu_controller
    if parsed.action != "reconcile":
        return run_controller(controller, parsed.action)
    if parsed.reason != "schedule":
        controller.record_demand(parsed.reason)
    return controller.reconcile(parsed.reason).as_dict()
