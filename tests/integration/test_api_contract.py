"""The API does what its OpenAPI document says: schemathesis against `worldmm serve`, and no cross-user access.

The property-based run reads the gateway's own /openapi.json, so every operation (a new route too) is
tested with positive and negative data, through the stateful phase along the document's links, with every
check (server errors, status codes, content types, response schemas, auth); its settings and the remaining
exceptions are in the committed schemathesis.toml. `make contract` runs the same for longer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.contract import (
    contract_gateway,
    contract_services,
    contract_token,
    contract_tokens,
    run_schemathesis,
)
from tests.support.gateway import RunningGateway
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services

pytestmark = pytest.mark.integration

CI_SEED = 20261125
CI_MAX_TIME_S = 100  # the whole run, all phases; the test stays under 3 minutes on 2 shared cores
ALICE, BOB = "user-alice", "user-bob"


@pytest.fixture
def contract(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    yield contract_services(settings, db, scripted_llm, tmp_path / "objects")


@pytest.fixture
def gateway(contract: Services) -> Iterator[RunningGateway]:
    with contract_gateway(contract) as running:
        yield running


@pytest.mark.timeout(CI_MAX_TIME_S + 120)
def test_every_operation_keeps_the_documented_contract_under_schemathesis(
    gateway: RunningGateway, contract: Services, tmp_path: Path
) -> None:
    # GIVEN the gateway serving its document, and two users' tokens
    tokens = contract_tokens(contract.settings)
    # WHEN schemathesis runs every phase and check over every operation with a fixed seed, as the first user
    # (the second replays the first's reads for the object-level authorization check)
    run = run_schemathesis(gateway.url, tokens, max_time_s=CI_MAX_TIME_S, seed=CI_SEED, workdir=tmp_path / "st")
    # THEN nothing failed, and it did test every operation the document lists
    assert run.returncode == 0, run.output[-20000:]
    served = httpx.get(f"{gateway.url}/openapi.json", timeout=10).json()
    documented = sum(len(item) for item in served["paths"].values())
    operations = run.report["operations"]
    assert operations["selected"] == documented and operations["tested"] == documented, run.summary
    assert run.report["failures"] == [], run.summary
    # AND every phase ran, the stateful one along the document's links included
    phases = run.report["phases"]
    assert {name: phases[name]["status"] for name in ("coverage", "fuzzing", "stateful")} == dict.fromkeys(
        ("coverage", "fuzzing", "stateful"), "success"
    ), phases


def _sample(schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """A small valid value for `schema` (required fields only), for probing with another user's ids."""
    if "$ref" in schema:
        return _sample(components[schema["$ref"].rsplit("/", 1)[-1]], components)
    if "anyOf" in schema:
        return _sample(next(b for b in schema["anyOf"] if b.get("type") != "null"), components)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _sample(props[name], components) for name in schema.get("required", [])}
    if kind == "integer":
        return schema.get("minimum", 0)
    if kind == "string":
        return "Where are my keys?"
    raise AssertionError(f"no sample for {schema}")


def _owned(client: httpx.Client) -> dict[str, str]:
    """The caller's resources, by the parameter names that name them: a session and a chat."""
    session = client.post("/sessions").json()["sessionId"]
    chat = client.post("/memories/chat", json={"question": "Where are my keys?"}).json()["chat_id"]
    return {"id": session, "chat_id": chat}


def test_another_users_token_never_reads_or_changes_a_session_or_chat(
    gateway: RunningGateway, contract: Services
) -> None:
    # GIVEN Alice's session and chat, and Bob's token
    settings = contract.settings
    alice = httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {contract_token(settings, ALICE)}"})
    bob = httpx.Client(base_url=gateway.url, headers={"Authorization": f"Bearer {contract_token(settings, BOB)}"})
    with alice, bob:
        owned = _owned(alice)
        messages_before = alice.get("/chats/messages", params={"chat_id": owned["chat_id"], "limit": 1}).json()
        document = alice.get("/openapi.json").json()
        components = document["components"]["schemas"]
        probed = []
        # WHEN Bob calls every documented operation that names a session or a chat, naming Alice's
        for path, item in document["paths"].items():
            for method, op in item.items():
                params = {p["name"]: p for p in op.get("parameters", [])}
                body_ref = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
                body = _sample(body_ref, components) if body_ref else None
                body_schema = components[body_ref["$ref"].rsplit("/", 1)[-1]] if body_ref else {}
                named = [n for n in owned if n in params or n in body_schema.get("properties", {})]
                if not named:
                    continue
                query = {n: _sample(p["schema"], components) for n, p in params.items() if p["in"] == "query"}
                query = {n: v for n, v in query.items() if params[n]["required"]}
                for name in named:
                    if params.get(name, {}).get("in") == "query":
                        query[name] = owned[name]
                    elif name in body_schema.get("properties", {}):
                        body = {**(body or {}), name: owned[name]}
                url = path.replace("{id}", owned["id"])
                answer = bob.request(method.upper(), url, params=query or None, json=body)
                probed.append((method.upper(), path))
                # THEN each is the same 403 an unknown id gets, and tells nothing about Alice's
                assert answer.status_code == 403, (method, path, answer.text)
                assert answer.json() == {"message": "Forbidden"}, (method, path)
        # AND Alice's chat and session are as they were: no message added, the session not ended
        messages_after = alice.get("/chats/messages", params={"chat_id": owned["chat_id"], "limit": 1}).json()
        assert messages_after == messages_before
        assert alice.post(f"/sessions/{owned['id']}/end").status_code == 200
        # AND Bob's own listing shows nothing of hers, and her page cursor does not work for him
        assert bob.post("/chats/list", json={}).json()["conversations"] == []
        cursor = messages_before["next_cursor"]
        stolen = bob.get("/chats/messages", params={"chat_id": owned["chat_id"], "cursor": cursor})
        assert stolen.status_code in (400, 403)
    assert {("POST", "/sessions/{id}/frames"), ("POST", "/sessions/{id}/end"), ("GET", "/chats/messages")} <= set(
        probed
    )
    assert ("POST", "/memories/chat") in probed


def test_every_link_names_an_operation_and_its_parameters(gateway: RunningGateway) -> None:
    # GIVEN the served document
    document = httpx.get(f"{gateway.url}/openapi.json", timeout=10).json()
    operations = {op["operationId"]: op for item in document["paths"].values() for op in item.values()}
    links = [
        (op["operationId"], link)
        for op in operations.values()
        for response in op["responses"].values()
        for link in response.get("links", {}).values()
    ]
    # THEN the capture flow and chat -> messages are linked, and each link's target takes its parameters
    targets = {(source, link["operationId"]) for source, link in links}
    assert {("CaptureStart", "CaptureFrames"), ("CaptureStart", "CaptureAudio")} <= targets
    assert ("CaptureStart", "CaptureEnd") in targets
    assert {("Chat", "ChatMessages"), ("ChatsList", "ChatMessages"), ("ChatMessages", "ChatMessages")} <= targets
    for _, link in links:
        names = {p["name"] for p in operations[link["operationId"]].get("parameters", [])}
        assert set(link["parameters"]) <= names, link


def test_a_method_a_path_does_not_declare_is_404_as_on_the_http_api(
    gateway: RunningGateway, contract: Services
) -> None:
    # GIVEN the served document and a valid token
    document = httpx.get(f"{gateway.url}/openapi.json", timeout=10).json()
    headers = {"Authorization": f"Bearer {contract_token(contract.settings)}"}
    templates = [(re.compile("^" + re.sub(r"\\{\w+\\}", "[^/]+", re.escape(p)) + "$"), p) for p in document["paths"]]
    for path in document["paths"]:
        concrete = path.replace("{id}", "01JAAAAAAAAAAAAAAAAAAAAAAA")
        # A method another template declares for this path is that route's (GET /memories/chat is
        # GET /memories/{id} with id "chat", on API Gateway as here): not an undeclared method.
        routed = {m.upper() for pattern, p in templates if pattern.match(concrete) for m in document["paths"][p]}
        for method in {"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} - routed:
            # WHEN a method the document does not list for the path is sent
            answer = httpx.request(method, f"{gateway.url}{concrete}", headers=headers, timeout=10)
            # THEN it is API Gateway's own 404, with no Allow header (the document says so in its description)
            assert answer.status_code == 404 and answer.json() == {"message": "Not Found"}, (method, path)
            assert "allow" not in answer.headers, (method, path)
    assert "404" in document["info"]["description"]
