"""POST /sessions/{id}/end: end a session and close its open windows (EndSession)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.http.common import current_user, make_app, resolve
from worldmm.observability import instrument

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.post("/sessions/<session_id>/end")
def end_session(session_id: str) -> dict[str, Any]:
    from worldmm.services import get_services

    user = current_user(app)
    return get_services().capture.end_session(user, session_id).model_dump(mode="json")


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
