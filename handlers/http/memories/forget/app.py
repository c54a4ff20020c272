"""DELETE /memories?from=&to=: erase everything the caller recorded in a time span, from every store."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app, parse_query
from worldmm.services import get_services
from worldmm.timeline.forget_span import forget_memories
from worldmm.timeline.models import ForgetSpanQuery

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.delete("/memories")
def forget_span() -> dict[str, Any]:
    user_id = current_user(app)
    query = parse_query(app, ForgetSpanQuery)
    return forget_memories(get_services().for_user(user_id), user_id, query).model_dump()


lambda_handler = entry_point(app, logger)
