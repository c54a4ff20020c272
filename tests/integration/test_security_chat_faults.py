"""PostgreSQL down or restarting never gives an answer other than 503, nor a chat row.

The chat handlers run in-process on the aws layout (chats in DynamoDB under moto, memory in a real embedded
PostgreSQL of this module's own, which the tests stop and start with `pg_ctl`): before a cold start, during a
warm container's request, and restarted between two requests. Every answer given while the database is down
is a 503 "cannot be reached" with Retry-After, no model writes an answer, and no chat or message is saved.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from handlers.http.memories.chat.app import lambda_handler as chat_handler
from handlers.http.memories.chat.app import lambda_handler as verbose_handler
from tests.support.capture import http_event, lambda_context
from tests.support.harness import embedded_postgres, make_settings
from tests.support.retrieval import MemoryWriter
from worldmm.chat.dynamo import DynamoChatRepository, dynamo_table_definitions
from worldmm.chat.settings import ChatSettings
from worldmm.config import AgentMode, Profile, Settings
from worldmm.db.local import LocalDatabase
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE = "user-alice"
FALSE_ANSWER = "I could not find that in your memories."
HANDLERS = {"chat": chat_handler, "verbose": verbose_handler}


@pytest.fixture(scope="module")
def own_pg() -> Iterator[LocalDatabase]:
    """An embedded PostgreSQL only these tests use, so they can stop and restart it."""
    with embedded_postgres(make_settings()) as local:
        yield local


def _stop(local: LocalDatabase) -> None:
    from embedded_postgres import _commands

    _commands.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=local.server.pgdata, user=local.server.system_user)  # type: ignore[attr-defined]


def _start(local: LocalDatabase) -> None:
    """Start the server again (nothing when it runs) on the same socket directory."""
    local.server.ensure_postgres_running()
    assert local.server.get_postmaster_info().socket_dir == local.socket_dir  # the same URL reaches it again


@pytest.fixture
def pg_up(own_pg: LocalDatabase) -> Iterator[LocalDatabase]:
    """The module's server, running and with empty tables; running again after the test."""
    from tests.support.harness import truncate_all

    truncate_all(own_pg.admin_url)
    yield own_pg
    _start(own_pg)


@pytest.fixture
def dynamo(aws: None) -> Any:
    client = boto3.client("dynamodb", region_name="us-east-1")
    for definition in dynamo_table_definitions(ChatSettings.of(_aws_settings("unused", AgentMode.LOOP))):
        client.create_table(**definition)
    return client


def _aws_settings(database_url: str, mode: AgentMode) -> Settings:
    # The allowance is off: the fault under test is PostgreSQL's, and these tables are the chats' only.
    return make_settings(
        worldmm_profile=Profile.AWS, database_url=database_url, agent_mode=mode, chat_allowance_model_calls=0
    )


def _cold_services(database_url: str, mode: AgentMode, llm: ScriptedLLM, dynamo: Any) -> Services:
    """A cold container's ports: nothing built yet but the model doubles and the DynamoDB client."""
    settings = _aws_settings(database_url, mode)
    services = Services(
        settings,
        llm=llm,
        embedder=HashEmbedder(settings.embedding_dim),
        chats=DynamoChatRepository(ChatSettings.of(settings), dynamo),
    )
    set_services(services)
    return services


def _script(llm: ScriptedLLM, searches_first: bool) -> ScriptedLLM:
    """The agent either answers at once (no search: only the agent's own first read touches memory) or searches."""
    if searches_first:
        llm.queue("reasoning_agent", [{"action": "SEARCH", "memory_type": "episodic", "query": "keys hall table"}])
    llm.script("reasoning_agent", {"action": "ANSWER"})
    llm.script("response", {"answer": FALSE_ANSWER, "cited": []})
    return llm


def _ask(handler: Callable[..., dict[str, Any]], question: str = "Where are my keys?") -> tuple[int, dict[str, Any]]:
    path = "/memories/chat/verbose" if handler is verbose_handler else "/memories/chat"
    response = handler(http_event("POST", path, sub=ALICE, body={"question": question}), lambda_context())
    assert response["statusCode"] != 503 or (response.get("headers") or {}).get("Retry-After")
    return response["statusCode"], json.loads(response["body"])


def _rows(dynamo: Any) -> int:
    settings = _aws_settings("unused", AgentMode.LOOP)
    return sum(dynamo.scan(TableName=t)["Count"] for t in (settings.chats_table, settings.messages_table))


def _assert_unreachable(status: int, body: dict[str, Any]) -> None:
    assert status == 503, body
    assert "cannot be reached" in body["message"] and FALSE_ANSWER not in json.dumps(body)


@pytest.fixture
def cleanup() -> Iterator[None]:
    yield
    set_services(None)


@pytest.mark.parametrize("mode", [AgentMode.LOOP, AgentMode.PLAN])
@pytest.mark.parametrize("searches_first", [False, True], ids=["answers-at-once", "searches"])
@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_security_postgres_down_before_a_cold_start_is_a_503_and_writes_nothing(
    pg_up: LocalDatabase, dynamo: Any, cleanup: None, name: str, searches_first: bool, mode: AgentMode
) -> None:
    # GIVEN PostgreSQL stopped before the container's first request
    _stop(pg_up)
    llm = _script(ScriptedLLM(), searches_first)
    _cold_services(pg_up.app_url, mode, llm, dynamo)
    # WHEN Alice asks (the agent may even answer without searching)
    status, body = _ask(HANDLERS[name])
    # THEN 503 "cannot be reached", no answer was written by the model, and no chat row exists
    _assert_unreachable(status, body)
    assert llm.calls_for("response") == []
    assert _rows(dynamo) == 0


@pytest.mark.parametrize("searches_first", [False, True], ids=["answers-at-once", "searches"])
@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_security_postgres_down_during_a_warm_request_is_a_503_and_writes_nothing(
    pg_up: LocalDatabase, dynamo: Any, cleanup: None, name: str, searches_first: bool
) -> None:
    # GIVEN a warm container that has answered once (its pool holds live connections)
    llm = _script(ScriptedLLM(), searches_first)
    services = _cold_services(pg_up.app_url, AgentMode.LOOP, llm, dynamo)
    MemoryWriter(services, ALICE).segment("I put my keys on the hall table.")
    first, _ = _ask(HANDLERS[name])
    assert first == 200
    written = _rows(dynamo)
    # WHEN PostgreSQL goes down and Alice asks again
    _stop(pg_up)
    status, body = _ask(HANDLERS[name])
    # THEN 503 and nothing more written
    _assert_unreachable(status, body)
    assert _rows(dynamo) == written


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_security_postgres_restarted_between_requests_never_answers_falsely(
    pg_up: LocalDatabase, dynamo: Any, cleanup: None, name: str
) -> None:
    # GIVEN a warm container that found Alice's keys (the agent searches before each answer)
    llm = ScriptedLLM()
    search = {"action": "SEARCH", "memory_type": "episodic", "query": "keys hall table"}
    llm.queue("reasoning_agent", [search, {"action": "ANSWER"}] * 3)
    llm.script("response", {"answer": "On the hall table.", "cited": [1]})
    services = _cold_services(pg_up.app_url, AgentMode.LOOP, llm, dynamo)
    MemoryWriter(services, ALICE).segment("I put my keys on the hall table.")
    assert _ask(HANDLERS[name])[0] == 200
    written = _rows(dynamo)
    # WHEN PostgreSQL restarts: one request while it is down, one after it is back (stale pooled connections)
    _stop(pg_up)
    down = _ask(HANDLERS[name])
    _start(pg_up)
    back_status, back = _ask(HANDLERS[name])
    # THEN the first is a 503 that writes nothing; the second reaches the memory again and answers from it
    _assert_unreachable(*down)
    assert back_status == 200 and back["answer"] == "On the hall table.", back
    answered = llm.calls_for("response")
    assert len(answered) == 2 and all("hall table" in call.prompt_text for call in answered)
    assert _rows(dynamo) == 2 * written  # the two answered turns, nothing of the one in between
