"""POST /memories/chat/verbose: the chat answer plus the reasoning agent's trace (spec 004)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from handlers.http.common import current_user, make_app, parse_body, resolve
from worldmm.chat.models import ChatRequest, VerboseChatResponse
from worldmm.chat.service import handle_chat
from worldmm.observability import instrument, timed
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.post("/memories/chat/verbose")
def chat_verbose() -> dict[str, Any]:
    user_id = current_user(app)
    request = parse_body(app, ChatRequest)
    with timed("ChatLatency"):
        result = handle_chat(get_services(), user_id, request.question, request.chat_id, verbose=True)
    return VerboseChatResponse(answer=result.answer, chat_id=result.chat_id, trace=result.trace).model_dump()


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return resolve(app, event, context)
