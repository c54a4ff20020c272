"""GET /memories/{id}: one of the caller's memories with its entities, facts and media URLs."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.get("/memories/<memory_id>")
def get_memory(memory_id: str) -> dict[str, Any]:
    user_id = current_user(app)
    return get_services().for_user(user_id).memories.get_memory(user_id, memory_id).model_dump()


lambda_handler = entry_point(app, logger)
