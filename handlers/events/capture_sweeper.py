"""CaptureSweeperFunction (scheduled): closes windows whose wall-time limit passed since their first upload."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from worldmm.observability import instrument
from worldmm.services import get_services

logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """EventBridge schedule → close overdue windows (each invokes ingest exactly once)."""
    result = get_services().capture.sweep()
    logger.info("sweep_complete", extra={"closed": len(result.closedWindows)})
    return result.model_dump(mode="json")
