"""POST /memories/chat and /memories/chat/verbose: answer a question from the caller's memories inside a
chat thread (spec 004); the verbose route adds the reasoning agent's trace. Each question is charged to the
caller's allowance of model calls first (worldmm.allowance: 429 with Retry-After when it is used up). The answer's
deadline counts from when the API received the request (`requestContext.timeEpoch`): a question that waited behind
others, or for a cold start, is given the composer's answer rather than a late one. ChatFunction and
ChatVerboseFunction both run this module; the route decides the response."""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app, parse_body
from worldmm.allowance.service import charge_question
from worldmm.chat.models import ChatRequest, ChatResponse, VerboseChatResponse
from worldmm.chat.service import ChatResult, handle_chat
from worldmm.observability import timed
from worldmm.services import get_services

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


def _answer(*, verbose: bool) -> ChatResult:
    user_id = current_user(app)
    request = parse_body(app, ChatRequest)
    services = get_services().for_user(user_id)  # the caller's database cell, resolved once
    charge_question(services, user_id)  # 429 before any model is called when the caller's allowance is used up
    with timed("ChatLatency"):
        return handle_chat(services, user_id, request.question, request.chat_id, verbose=verbose, waited_s=_waited_s())


def _waited_s() -> float:
    """Seconds since the API received the request (`requestContext.timeEpoch`; 0 for an event without one)."""
    epoch_ms = app.current_event.raw_event.get("requestContext", {}).get("timeEpoch") or 0
    return max(0.0, time.time() - epoch_ms / 1000) if epoch_ms else 0.0


@app.post("/memories/chat")
def chat() -> dict[str, Any]:
    result = _answer(verbose=False)
    return ChatResponse(answer=result.answer, chat_id=result.chat_id).model_dump()


@app.post("/memories/chat/verbose")
def chat_verbose() -> dict[str, Any]:
    result = _answer(verbose=True)
    return VerboseChatResponse(answer=result.answer, chat_id=result.chat_id, trace=result.trace).model_dump()


lambda_handler = entry_point(app, logger)
