"""POST /sessions: start a capture session for the caller (writes the sessions row with `createdAt`)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.http.common import current_user, make_app, resolve
from worldmm.observability import instrument

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.post("/sessions")
def start_session() -> Response:
    from worldmm.services import get_services

    user = current_user(app)
    result = get_services().capture.start_session(user)
    return Response(
        status_code=201, content_type=content_types.APPLICATION_JSON, body=result.model_dump_json()
    )


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
