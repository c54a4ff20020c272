"""POST /chats/list: the caller's chats, newest activity first, paginated (spec 004 listChats)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.http.common import current_user, make_app, parse_body, resolve
from worldmm.chat.models import ListChatsRequest
from worldmm.observability import instrument
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.post("/chats/list")
def list_chats() -> dict[str, Any]:
    user_id = current_user(app)
    request = parse_body(app, ListChatsRequest)
    return get_services().for_user(user_id).chats.list_chats(user_id, request.cursor, request.limit).model_dump()


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
