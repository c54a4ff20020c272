"""PATCH /entities/{id}: rename one of the caller's entities, or merge it into the one already of that name."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app, parse_body
from worldmm.services import get_services
from worldmm.timeline.models import EntityCorrectionRequest

app = make_app()
logger = Logger()


@app.patch("/entities/<entity_id>")
def correct_entity(entity_id: str) -> dict[str, Any]:
    user_id = current_user(app)
    request = parse_body(app, EntityCorrectionRequest)
    return get_services().for_user(user_id).corrections.correct(user_id, entity_id, request.name).model_dump()


lambda_handler = entry_point(app, logger)
