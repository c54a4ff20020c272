"""RetriggerIngestFunction: re-run a session's windows (pending, forced, or named)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from worldmm.observability import instrument
from worldmm.pipeline.events import RetriggerEvent
from worldmm.pipeline.retrigger import retrigger
from worldmm.services import get_services

logger = Logger(service="worldmm")


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """`{triggered, skipped}`, or `{statusCode: 400}` when sessionId or userId is missing."""
    try:
        parsed = RetriggerEvent.model_validate(event or {})
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        logger.warning("retrigger_bad_input", extra={"fields": fields})
        return {"statusCode": 400, "body": json.dumps({"error": "invalid retrigger event", "fields": fields})}
    return retrigger(get_services(), parsed).model_dump()
