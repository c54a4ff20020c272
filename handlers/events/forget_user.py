"""ForgetUserFunction (operators: `sam remote invoke -e events/forget_user.json`): `{"userId": U}`."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from worldmm.errors import BadRequest
from worldmm.forget_user import check_user_id, forget_user
from worldmm.observability import instrument
from worldmm.services import get_services

logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Erase one user's memories; a 400 for a missing or malformed user id."""
    user_id = event.get("userId") if isinstance(event, dict) else None
    requested_by = event.get("requestedBy") if isinstance(event, dict) else None
    try:
        check_user_id(user_id)  # type: ignore[arg-type]
    except BadRequest as exc:
        return {"statusCode": 400, "body": json.dumps({"error": str(exc)})}
    by = requested_by if isinstance(requested_by, str) and requested_by else f"lambda:{context.aws_request_id}"
    return forget_user(get_services().for_user(user_id), user_id, requested_by=by).as_dict()  # type: ignore[arg-type]
