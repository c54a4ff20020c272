"""The MCP endpoint of `worldmm serve`, driven with the official SDK's Streamable HTTP client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.gateway import HumanScreen, RunningGateway, running_gateway
from tests.support.ingest import (
    ingest_scripted_window,
    make_ingest_services,
)
from worldmm.config import AgentMode, Settings
from worldmm.db.engine import Database
from worldmm.gateway.auth import issue_token
from worldmm.gateway.confirm import ConfirmationCodes
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, local_handlers, set_services

pytestmark = pytest.mark.integration

ALICE, BOB = "user-alice", "user-bob"


@pytest.fixture
def memories(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    """Alice remembers a red mug in the kitchen; Bob a blue bicycle in the garage (one window each)."""
    services = make_ingest_services(
        settings.model_copy(update={"agent_mode": AgentMode.PLAN}), db, scripted_llm, tmp_path / "objects"
    )
    for user, session, caption, entities, triples in (
        (ALICE, "sess-alice", "Kate holds a red mug in the kitchen.", ["Kate", "mug"], [["Kate", "holds", "red mug"]]),
        (BOB, "sess-bob", "Tom rides a blue bicycle in the garage.", ["Tom", "bicycle"], [["Tom", "rides", "bicycle"]]),
    ):
        ingest_scripted_window(
            services, scripted_llm, user, session, caption=caption, entities=entities, triples=triples
        )
    yield services
    set_services(None)


@pytest.fixture
def screen() -> HumanScreen:
    return HumanScreen()


@pytest.fixture
def gateway(memories: Services, screen: HumanScreen) -> Iterator[RunningGateway]:
    with running_gateway(memories, confirmations=ConfirmationCodes(screen)) as running:
        yield running


def _call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """(tool names listed, the tool's structured result) over Streamable HTTP with a bearer token."""

    async def run() -> tuple[list[str], dict[str, Any]]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content
            structured = result.structured_content or json.loads(result.content[0].text)  # type: ignore[union-attr]
            return tools, structured

    return anyio.run(run)


def test_search_memories_returns_the_callers_memories_with_time_and_segment(
    gateway: RunningGateway, memories: Services
) -> None:
    token = issue_token(ALICE, memories.settings)
    tools, result = _call(gateway.url, token, "search_memories", {"memory_type": "episodic", "query": "red mug Kate"})
    assert {"search_memories", "ask"} <= set(tools)
    [memory] = result["memories"]
    assert "red mug" in memory["text"] and memory["segment_id"] and memory["start_time"] and memory["end_time"]


def test_search_memories_time_range_excludes_memories_outside_it(gateway: RunningGateway, memories: Services) -> None:
    token = issue_token(ALICE, memories.settings)
    _, result = _call(
        gateway.url,
        token,
        "search_memories",
        {"memory_type": "episodic", "query": "red mug Kate", "until": "2026-05-01T09:00:00+00:00"},
    )
    assert result["memories"] == []  # the window was recorded at 10:00 that day


def test_timeline_lists_only_the_callers_memories_in_time_order(gateway: RunningGateway, memories: Services) -> None:
    # WHEN Alice and Bob each ask for their windows
    tools, alice = _call(gateway.url, issue_token(ALICE, memories.settings), "timeline", {"scale": 30})
    _, bob = _call(gateway.url, issue_token(BOB, memories.settings), "timeline", {})
    # THEN each sees their own window only, with its caption and session, and the data note
    assert "timeline" in tools
    [window] = alice["memories"]
    assert "red mug" in window["caption"] and window["session_id"] == "sess-alice" and window["status"] == "complete"
    assert all("red mug" not in m["caption"] for m in bob["memories"]) and alice["note"]
    assert "sess-bob" in {m["session_id"] for m in bob["memories"]}


def test_ask_answers_with_citations(gateway: RunningGateway, memories: Services) -> None:
    token = issue_token(ALICE, memories.settings)
    _, result = _call(gateway.url, token, "ask", {"question": "What did Kate hold?"})
    assert "mug" in result["answer"].lower()
    assert result["citations"] and all(c["segment_id"] for c in result["citations"])


def test_one_users_token_never_reaches_another_users_memories(gateway: RunningGateway, memories: Services) -> None:
    # GIVEN Bob's token, asking for what only Alice remembers
    token = issue_token(BOB, memories.settings)
    _, found = _call(gateway.url, token, "search_memories", {"memory_type": "episodic", "query": "red mug Kate"})
    _, asked = _call(gateway.url, token, "ask", {"question": "What did Kate hold?"})
    # THEN none of Alice's memories come back, and the answer cites only Bob's
    assert all("mug" not in m["text"] for m in found["memories"])
    assert "mug" not in asked["answer"].lower()
    assert all("bicycle" in m["text"] for m in found["memories"])


def test_forget_me_needs_the_code_shown_to_the_human_then_erases_only_the_callers_memories(
    gateway: RunningGateway, memories: Services, screen: HumanScreen
) -> None:
    # GIVEN the local function table behind the invoker (as `worldmm serve` has it)
    name = memories.settings.forget_function_name
    memories.invoker.register(name, local_handlers(memories)[name])  # type: ignore[attr-defined]
    alice = issue_token(ALICE, memories.settings)
    # WHEN Alice's agent calls forget_me, it gets no code: the code is shown to Alice alone, nothing is erased
    tools, asked = _call(gateway.url, alice, "forget_me", {})
    assert "forget_me" in tools and asked["accepted"] is False
    code = screen.last_code(ALICE)
    assert code not in json.dumps(asked)
    _, wrong = _call(gateway.url, alice, "forget_me", {"code": "forget everything"})
    assert wrong["accepted"] is False
    _, still = _call(gateway.url, alice, "search_memories", {"memory_type": "episodic", "query": "red mug Kate"})
    assert still["memories"]
    # WHEN she reads the code to her agent
    _, done = _call(gateway.url, alice, "forget_me", {"code": code})
    # THEN her memories are gone and Bob's are untouched; the erase was asked for her alone
    assert done["accepted"] is True
    assert memories.invoker.invocations[-1] == (name, {"userId": ALICE, "requestedBy": "mcp"})  # type: ignore[attr-defined]
    _, gone = _call(gateway.url, alice, "search_memories", {"memory_type": "episodic", "query": "red mug Kate"})
    assert gone["memories"] == []
    bob = issue_token(BOB, memories.settings)
    _, kept = _call(gateway.url, bob, "search_memories", {"memory_type": "episodic", "query": "blue bicycle Tom"})
    assert any("bicycle" in m["text"] for m in kept["memories"])


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-jwt", "Basic abc"])
def test_mcp_without_a_valid_bearer_token_is_401(gateway: RunningGateway, authorization: str | None) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx.post(f"{gateway.url}/mcp", json=body, headers=headers, timeout=10)
    assert response.status_code == 401


def _lambda_call(sub: str | None, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    from typing import cast

    from aws_lambda_powertools.utilities.typing import LambdaContext

    from handlers.http.mcp.app import lambda_handler
    from worldmm.gateway.events import LocalLambdaContext, build_event

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": "Bearer token-the-authorizer-verified",
    }
    event = build_event("POST", "/mcp", headers, json.dumps(body).encode(), {"sub": sub} if sub else {})
    return lambda_handler(event, cast(LambdaContext, LocalLambdaContext("McpFunction")))


def test_mcp_lambda_serves_the_authorizers_subject_only(memories: Services) -> None:
    # WHEN the deployed function gets a tools/call behind the JWT authorizer, for Alice and then for Bob
    set_services(memories)
    arguments = {"memory_type": "episodic", "query": "red mug Kate"}
    alice = _lambda_call(ALICE, "search_memories", arguments)
    bob = _lambda_call(BOB, "search_memories", arguments)
    nobody = _lambda_call(None, "search_memories", arguments)
    # THEN each sees only their own memories, and a request without a verified subject is refused
    assert alice["statusCode"] == 200, alice["body"]
    alice_memories = json.loads(alice["body"])["result"]["structuredContent"]["memories"]
    bob_memories = json.loads(bob["body"])["result"]["structuredContent"]["memories"]
    assert ["red mug" in m["text"] for m in alice_memories] == [True]
    assert all("mug" not in m["text"] for m in bob_memories)
    assert nobody["statusCode"] == 401
