"""GET /chats/messages: a chat's messages newest first, for its owner only (spec 004 getMessages)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app, parse_query
from worldmm.chat.models import MessagesQuery
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.get("/chats/messages")
def get_messages() -> dict[str, Any]:
    user_id = current_user(app)
    query = parse_query(app, MessagesQuery)
    chats = get_services().for_user(user_id).chats
    return chats.get_messages(user_id, query.chat_id, query.cursor, query.limit).model_dump()


lambda_handler = entry_point(app, logger)
