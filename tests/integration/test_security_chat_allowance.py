"""No one user can run up the model bill (issue 64, Medium 2; Build 2).

Each question — POST /memories/chat, /memories/chat/verbose, MCP `ask` — first takes its worst case in model
calls from its asker's token bucket. Once the bucket is empty the routes answer 429 with Retry-After and a
message (MCP: a tool error saying when), before any model is called; another user's questions go on; forget-me
erases the bucket. Before this change every one of these questions was answered, however many came.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from handlers.http.memories.chat.app import lambda_handler as chat_handler
from worldmm.allowance.service import question_cost
from worldmm.allowance.settings import AllowanceSettings
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.errors import QuotaExceeded
from worldmm.forget_user import forget_user
from worldmm.gateway.events import LocalLambdaContext, build_event
from worldmm.gateway.mcp import ask
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE, BOB = "user-alice", "user-bob"
QUESTIONS = 2  # the allowance holds two questions' worst case, and gains back one question's an hour


@pytest.fixture
def services(settings: Settings, db: Database, scripted_llm: ScriptedLLM) -> Iterator[Services]:
    scripted_llm.script("reasoning_agent", {"action": "ANSWER"}).script("response", {"answer": "On the table."})
    cost = settings.max_agent_rounds + 1
    limited = settings.model_copy(
        update={"chat_allowance_model_calls": QUESTIONS * cost, "chat_allowance_model_calls_per_hour": cost}
    )
    svc = Services(limited, db=db, llm=scripted_llm, embedder=HashEmbedder(settings.embedding_dim))
    set_services(svc)
    yield svc
    set_services(None)


def _chat(user: str, path: str = "/memories/chat") -> dict[str, Any]:
    claims = {"sub": user, "iss": "worldmm-local", "aud": "worldmm"}
    body = json.dumps({"question": "Where are my keys?"}).encode()
    event = build_event("POST", path, {"content-type": "application/json"}, body, claims)
    return dict(chat_handler(event, LocalLambdaContext(function_name="test")))


def test_security_chat_past_the_allowance_is_429_with_retry_after_fails_on_todays_code(
    services: Services, scripted_llm: ScriptedLLM
) -> None:
    # GIVEN Alice used her allowance, one question on each chat route
    assert [_chat(ALICE)["statusCode"], _chat(ALICE, "/memories/chat/verbose")["statusCode"]] == [200, 200]
    calls = len(scripted_llm.calls)
    # WHEN she asks again, on either route
    refused = [_chat(ALICE), _chat(ALICE, "/memories/chat/verbose")]
    # THEN both are 429 with a Retry-After within the hour it takes to refill a question, and a message
    for response in refused:
        assert response["statusCode"] == 429
        assert 0 < int(response["headers"]["Retry-After"]) <= 3600
        assert "allowance" in json.loads(response["body"])["message"]
    # AND no model was called for them
    assert len(scripted_llm.calls) == calls
    # AND Bob's questions go on
    assert _chat(BOB)["statusCode"] == 200


def test_security_mcp_ask_counts_against_the_same_allowance_fails_on_todays_code(services: Services) -> None:
    # GIVEN Alice used her allowance in chat
    assert [_chat(ALICE)["statusCode"], _chat(ALICE)["statusCode"]] == [200, 200]
    # WHEN her MCP client asks
    with pytest.raises(QuotaExceeded) as refused:
        ask(services, ALICE, "Where are my keys?")
    # THEN it is refused with when to try again; Bob's client is answered
    assert refused.value.retry_after_s > 0
    assert ask(services, BOB, "Where are my keys?").answer


def test_security_forget_me_erases_the_allowance_fails_on_todays_code(services: Services) -> None:
    # GIVEN Alice used her allowance
    assert [_chat(ALICE)["statusCode"], _chat(ALICE)["statusCode"], _chat(ALICE)["statusCode"]] == [200, 200, 429]
    # WHEN she is forgotten
    report = forget_user(services, ALICE, requested_by="test")
    # THEN her bucket went with her data: she starts again with a full one
    assert report.deleted.get("postgres.worldmm_allowances") == 1
    assert _chat(ALICE)["statusCode"] == 200


def test_a_question_costs_its_worst_case_in_model_calls(settings: Settings) -> None:
    assert question_cost(AllowanceSettings.of(settings)) == settings.max_agent_rounds + 1
