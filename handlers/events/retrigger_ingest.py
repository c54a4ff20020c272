"""RetriggerIngestFunction: re-run a session's windows (pending, forced, or named)."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from worldmm.ingest.events import EventRejected, RetriggerEvent
from worldmm.ingest.retrigger import retrigger
from worldmm.ingest.steplog import log_step
from worldmm.observability import instrument
from worldmm.services import get_services

logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """`{triggered, skipped}`; `{statusCode: 400}` for an invalid event (a missing or malformed field, too
    many windows), `{statusCode: 403}` when the session does not exist or is not the event's user's."""
    try:
        parsed = RetriggerEvent.model_validate(event or {})
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors(include_url=False)})
        log_step(logger, "event_rejected", level="warning", reason="invalid_event", fields=fields)
        return {"statusCode": 400, "body": json.dumps({"error": "invalid retrigger event", "fields": fields})}
    try:
        return retrigger(get_services().for_user(parsed.userId), parsed).model_dump()
    except EventRejected as rejected:
        log_step(
            logger, "event_rejected", level="warning", reason=rejected.reason, session_id=parsed.sessionId
        )
        return {"statusCode": 403, "body": json.dumps({"error": str(rejected)})}
