"""POST /sessions: start a capture session for the caller (writes the sessions row with `createdAt`)."""

from __future__ import annotations

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response, content_types

from handlers.http.common import current_user, entry_point, make_app

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


lambda_handler = entry_point(app, logger)
