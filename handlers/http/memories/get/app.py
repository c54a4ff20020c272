"""GET /memories/{id}: one of the caller's memories with its entities, facts and media URLs."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.http.common import current_user, make_app, resolve
from worldmm.observability import instrument
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.get("/memories/<memory_id>")
def get_memory(memory_id: str) -> dict[str, Any]:
    user_id = current_user(app)
    return get_services().for_user(user_id).memories.get_memory(user_id, memory_id).model_dump()


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
