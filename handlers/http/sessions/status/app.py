"""GET /sessions/{id}: a capture session's ingest status, window by window, with counts."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.get("/sessions/<session_id>")
def session_status(session_id: str) -> dict[str, Any]:
    user_id = current_user(app)
    return get_services().for_user(user_id).memories.session_status(user_id, session_id).model_dump()


lambda_handler = entry_point(app, logger)
