"""POST /chats/list: the caller's chats, newest activity first, paginated (spec 004 listChats)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app, parse_body
from worldmm.chat.models import ListChatsRequest
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.post("/chats/list")
def list_chats() -> dict[str, Any]:
    user_id = current_user(app)
    request = parse_body(app, ListChatsRequest)
    return get_services().for_user(user_id).chats.list_chats(user_id, request.cursor, request.limit).model_dump()


lambda_handler = entry_point(app, logger)
