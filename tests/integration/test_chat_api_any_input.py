"""Property tests on the real chat stack (PostgreSQL chat store, the reasoning agent, a scripted
model): whatever body or query arrives, the answer is a 2xx or a 4xx with a JSON message, and a rejected
request writes nothing and asks no model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from handlers.http.chats.list.app import lambda_handler as list_handler
from handlers.http.chats.messages.app import lambda_handler as messages_handler
from handlers.http.memories.chat.app import lambda_handler as chat_handler
from tests.support.capture import http_event, lambda_context
from worldmm.db.models import Chat, ChatMessage
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services

pytestmark = pytest.mark.integration

ALICE = "user-alice"

_scalar = st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.text(max_size=30)
_value = st.one_of(_scalar, st.lists(_scalar, max_size=3), st.dictionaries(st.text(max_size=5), _scalar, max_size=2))
_chat_body = st.fixed_dictionaries(
    {},
    optional={
        "question": st.one_of(st.text(max_size=60), st.text(min_size=2001, max_size=2100), _value),
        "chat_id": st.one_of(st.text(max_size=70), st.uuids().map(str), _value),
        "user_id": st.text(max_size=10),
    },
)
_list_body = st.fixed_dictionaries({}, optional={"cursor": st.one_of(st.text(max_size=80), _value), "limit": _value})


@pytest.fixture
def live(services: Services, scripted_llm: ScriptedLLM) -> Iterator[Services]:
    scripted_llm.script("reasoning_agent", {"action": "ANSWER"})
    scripted_llm.script("response", {"answer": "On the hall table.", "cited": []})
    yield services


def _writes(services: Services) -> tuple[int, int]:
    with services.db.unit_of_work(ALICE) as session:
        chats = session.scalar(select(func.count()).select_from(Chat)) or 0
        messages = session.scalar(select(func.count()).select_from(ChatMessage)) or 0
    return chats, messages


def _outcome(response: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status = response["statusCode"]
    body = json.loads(response["body"])
    assert 200 <= status < 300 or (400 <= status < 500 and isinstance(body.get("message"), str) and body["message"])
    return status, body


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.one_of(_chat_body.map(json.dumps), st.text(max_size=40)))
def test_property_chat_answers_or_rejects_without_writing(live: Services, body: str) -> None:
    llm: ScriptedLLM = live.llm  # type: ignore[assignment]
    before, calls = _writes(live), len(llm.calls)
    status, _ = _outcome(chat_handler(http_event("POST", "/memories/chat", sub=ALICE, body=body), lambda_context()))
    if status >= 400:
        assert _writes(live) == before and len(llm.calls) == calls
    else:
        assert _writes(live)[1] == before[1] + 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(_list_body.map(json.dumps), st.text(max_size=40)),
    query=st.dictionaries(st.sampled_from(["chat_id", "cursor", "limit"]), st.text(max_size=60), max_size=3),
)
def test_property_chat_listings_answer_or_reject(live: Services, body: str, query: dict[str, str]) -> None:
    before = _writes(live)
    _outcome(list_handler(http_event("POST", "/chats/list", sub=ALICE, body=body), lambda_context()))
    event = http_event("GET", "/chats/messages", sub=ALICE)
    event["queryStringParameters"] = query
    _outcome(messages_handler(event, lambda_context()))
    assert _writes(live) == before
