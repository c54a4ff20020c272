"""POST /sessions/{id}/end: end a session and close its open windows (EndSession)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.post("/sessions/<session_id>/end")
def end_session(session_id: str) -> dict[str, Any]:
    from worldmm.services import get_services

    user = current_user(app)
    return get_services().capture.end_session(user, session_id).model_dump(mode="json")


lambda_handler = entry_point(app, logger)
