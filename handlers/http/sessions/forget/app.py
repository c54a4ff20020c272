"""DELETE /sessions/{id}: erase one of the caller's capture sessions from every store."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app
from worldmm.services import get_services
from worldmm.timeline.forget_span import forget_session

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.delete("/sessions/<session_id>")
def forget(session_id: str) -> dict[str, Any]:
    user_id = current_user(app)
    return forget_session(get_services().for_user(user_id), user_id, session_id).model_dump()


lambda_handler = entry_point(app, logger)
