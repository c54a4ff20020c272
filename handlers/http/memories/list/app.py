"""GET /memories: the caller's memories overlapping a time span, oldest first, paginated."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app, parse_query
from worldmm.services import get_services
from worldmm.timeline.models import MemoriesQuery

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.get("/memories")
def list_memories() -> dict[str, Any]:
    user_id = current_user(app)
    query = parse_query(app, MemoriesQuery)
    return get_services().for_user(user_id).memories.list_memories(user_id, query).model_dump()


lambda_handler = entry_point(app, logger)
