"""DELETE /memories?from=&to=: erase everything the caller recorded in a time span, from every store."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.http.common import current_user, make_app, parse_query, resolve
from worldmm.memories.forget_span import forget_memories
from worldmm.memories.models import ForgetSpanQuery
from worldmm.observability import instrument
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.delete("/memories")
def forget_span() -> dict[str, Any]:
    user_id = current_user(app)
    query = parse_query(app, ForgetSpanQuery)
    return forget_memories(get_services().for_user(user_id), user_id, query).model_dump()


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
