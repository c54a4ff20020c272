"""GET /memories: the caller's memories overlapping a time span, oldest first, paginated."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.http.common import current_user, make_app, parse_query, resolve
from worldmm.memories.models import MemoriesQuery
from worldmm.observability import instrument
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.get("/memories")
def list_memories() -> dict[str, Any]:
    user_id = current_user(app)
    query = parse_query(app, MemoriesQuery)
    return get_services().for_user(user_id).memories.list_memories(user_id, query).model_dump()


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
