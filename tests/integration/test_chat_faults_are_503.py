"""Through the real chat handlers, a lost database is a 503 that writes nothing (never
"I could not find that in your memories."), and a failing retriever is recorded in the trace as a failure,
not as "nothing found"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from handlers.http.memories.chat.app import lambda_handler as chat_handler
from handlers.http.memories.chat.app import lambda_handler as verbose_handler
from tests.support.capture import http_event, lambda_context
from tests.support.retrieval import MemoryWriter
from worldmm.chat.dynamo import DynamoChatRepository, dynamo_table_definitions
from worldmm.chat.settings import ChatSettings
from worldmm.config import AgentMode, Profile, Settings
from worldmm.db.engine import Database
from worldmm.errors import MemoryUnavailableError
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.retrieval.models import MemoryKind
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE = "user-alice"
DEAD_DATABASE = "postgresql+psycopg://worldmm_app@127.0.0.1:1/worldmm"  # nothing listens: PostgreSQL is down


def ask(handler: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
    path = "/memories/chat/verbose" if handler is verbose_handler else "/memories/chat"
    response = handler(http_event("POST", path, sub=ALICE, body=body), lambda_context())
    return response["statusCode"], json.loads(response["body"]), response.get("headers") or {}


@pytest.fixture
def installed() -> Iterator[list[Services]]:
    slot: list[Services] = []
    yield slot
    set_services(None)


def _install(slot: list[Services], services: Services) -> Services:
    slot.append(services)
    set_services(services)
    return services


def _agent(llm: ScriptedLLM) -> ScriptedLLM:
    llm.queue("reasoning_agent", [{"action": "SEARCH", "memory_type": "episodic", "query": "keys"}])
    llm.script("reasoning_agent", {"action": "ANSWER"})
    llm.script("response", {"answer": "I could not find that in your memories.", "cited": []})
    return llm


@pytest.mark.parametrize("handler", [chat_handler, verbose_handler])
def test_database_down_is_a_503_and_nothing_is_saved(
    settings: Settings, aws: None, installed: list[Services], handler: Any
) -> None:
    # GIVEN the aws layout: chats in DynamoDB, memory in PostgreSQL — and PostgreSQL is down
    aws_settings = settings.model_copy(
        update={"worldmm_profile": Profile.AWS, "agent_mode": AgentMode.LOOP, "chat_allowance_model_calls": 0}
    )  # the allowance is off: the fault under test is the memory store
    client = boto3.client("dynamodb", region_name="us-east-1")
    for definition in dynamo_table_definitions(ChatSettings.of(aws_settings)):
        client.create_table(**definition)
    llm = _agent(ScriptedLLM())
    _install(
        installed,
        Services(
            aws_settings,
            db=Database(DEAD_DATABASE),
            llm=llm,
            embedder=HashEmbedder(aws_settings.embedding_dim),
            chats=DynamoChatRepository(ChatSettings.of(aws_settings), client),
        ),
    )
    # WHEN Alice asks
    status, body, headers = ask(handler, {"question": "Where are my keys?"})
    # THEN 503 with a message that says memory is unreachable; no answer, no chat, no message written
    assert status == 503, body
    assert "cannot be reached" in body["message"] and headers.get("Retry-After")
    assert llm.calls_for("response") == []
    for table in (aws_settings.chats_table, aws_settings.messages_table):
        assert client.scan(TableName=table)["Count"] == 0


def test_database_down_with_a_chat_id_is_a_503_locally(settings: Settings, installed: list[Services]) -> None:
    # GIVEN the local profile, where the chat store is PostgreSQL too, and PostgreSQL down
    services = Services(settings, db=Database(DEAD_DATABASE), llm=_agent(ScriptedLLM()),
                        embedder=HashEmbedder(settings.embedding_dim))
    _install(installed, services)
    status, body, _ = ask(chat_handler, {"question": "Where are my keys?", "chat_id": "3f2b"})
    assert status == 503 and "cannot be reached" in body["message"]


def _memories(services: Services) -> None:
    writer = MemoryWriter(services, ALICE)
    writer.segment("I put my keys on the hall table.")


def test_a_failing_retriever_is_recorded_in_the_trace_not_read_as_nothing_found(
    services: Services, installed: list[Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    from worldmm.retrieval import agent
    from worldmm.retrieval.models import RetrievalResult

    # GIVEN the fixed plan (episodic + semantic search) and a semantic retriever that breaks
    plan = services.replace()
    plan.settings = services.settings.model_copy(update={"agent_mode": AgentMode.PLAN})
    _memories(plan)
    real = agent.default_retrievers()

    def broken(*args: Any, **kwargs: Any) -> RetrievalResult:
        raise ValueError("semantic index corrupt")

    monkeypatch.setattr(agent, "default_retrievers", lambda: {**real, MemoryKind.SEMANTIC: broken})
    _install(installed, plan)
    # WHEN asked through the verbose endpoint
    status, body, _ = ask(verbose_handler, {"question": "Where are my keys?"})
    # THEN the answer stands on the search that worked, and the failed one is a failure in the trace
    assert status == 200, body
    rounds = {r["memory_type"]: r for r in body["trace"]["rounds"]}
    assert rounds["semantic"]["error"] and "ValueError" in rounds["semantic"]["error"]
    assert rounds["episodic"]["error"] is None and rounds["episodic"]["retrieved_ids"]
    assert "search failed" in (body["trace"]["answer_note"] or "")


def test_every_search_failing_is_a_503_not_i_dont_remember(
    services: Services, installed: list[Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    from worldmm.retrieval import agent

    plan = services.replace()
    plan.settings = services.settings.model_copy(update={"agent_mode": AgentMode.PLAN})

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("index gone")

    monkeypatch.setattr(agent, "default_retrievers", lambda: dict.fromkeys(MemoryKind, broken))
    _install(installed, plan)
    status, body, _ = ask(chat_handler, {"question": "Where are my keys?"})
    assert status == 503 and body["message"] == MemoryUnavailableError.MESSAGE
    assert plan.chats.list_chats(ALICE).conversations == []
