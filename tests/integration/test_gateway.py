"""`worldmm serve` / `worldmm token`: real HTTP on 127.0.0.1 through the JWT check into the handlers."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import jwt
import pytest

from tests.support.gateway import running_gateway
from tests.support.template import ROOT, load_template
from worldmm.cli import main as cli_main
from worldmm.gateway.auth import issue_token
from worldmm.gateway.keys import gateway_keys
from worldmm.gateway.mcp import MCP_PATH
from worldmm.gateway.routes import ROUTES
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services

pytestmark = pytest.mark.integration

ALICE = "user-alice"


@pytest.fixture
def api(services: Services) -> Iterator[str]:
    """The local gateway serving on an ephemeral 127.0.0.1 port; yields its base URL."""
    with running_gateway(services) as running:
        yield running.url


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_serve_chat_round_trip_with_a_token(api: str, services: Services, scripted_llm: ScriptedLLM) -> None:
    # GIVEN the agent answers at once, and Alice's development token
    scripted_llm.script("reasoning_agent", {"action": "ANSWER"}).script("response", {"answer": "On the hall table."})
    token = issue_token(ALICE, services.settings)
    with httpx.Client(base_url=api, headers=_auth(token), timeout=10) as client:
        # WHEN she asks over HTTP, then lists her chats and reads the messages
        asked = client.post("/memories/chat", json={"question": "Where are my keys?"})
        listed = client.post("/chats/list", json={})
        chat_id = asked.json()["chat_id"]
        read = client.get("/chats/messages", params={"chat_id": chat_id, "limit": 1})
    # THEN each answer is the handler's, for the token's subject
    assert asked.status_code == 200 and asked.json()["answer"] == "On the hall table."
    assert asked.headers["content-type"].startswith("application/json")
    assert [c["id"] for c in listed.json()["conversations"]] == [chat_id]
    assert read.status_code == 200 and [m["role"] for m in read.json()["messages"]] == ["assistant"]
    assert read.json()["next_cursor"] is not None
    assert services.chats.chat_owned_by(ALICE, chat_id)


def test_serve_maps_handler_errors_to_their_status(api: str, services: Services) -> None:
    token = issue_token(ALICE, services.settings)
    with httpx.Client(base_url=api, headers=_auth(token), timeout=10) as client:
        forbidden = client.get("/chats/messages", params={"chat_id": "not-a-chat"})
        bad = client.post("/memories/chat", json={"question": ""})
    assert forbidden.status_code == 403 and forbidden.json() == {"message": "Forbidden"}
    assert bad.status_code == 400


@pytest.mark.parametrize(
    "case", ["missing", "not-bearer", "wrong-key", "expired", "wrong-audience", "no-sub"]
)
def test_serve_rejects_requests_without_a_valid_token_with_401(
    api: str, services: Services, case: str
) -> None:
    # GIVEN a request whose token API Gateway's JWT authorizer would refuse
    settings = services.settings
    claims = {"sub": ALICE, "iss": settings.jwt_issuer, "aud": settings.jwt_audience, "exp": 4_000_000_000}
    secret: bytes | str = gateway_keys(settings).token
    headers: dict[str, str] = {}
    if case == "not-bearer":
        headers = {"Authorization": f"Basic {issue_token(ALICE, settings)}"}
    elif case != "missing":
        if case == "wrong-key":
            secret = "another-key-of-the-same-length-or-more"
        elif case == "expired":
            claims["exp"] = 1
        elif case == "wrong-audience":
            claims["aud"] = "someone-else"
        elif case == "no-sub":
            del claims["sub"]
        headers = _auth(jwt.encode(claims, secret, algorithm="HS256"))
    # WHEN it reaches the server THEN 401, and the handler never ran
    response = httpx.post(f"{api}/chats/list", json={}, headers=headers, timeout=10)
    assert response.status_code == 401 and response.json() == {"message": "Unauthorized"}


def test_serve_unknown_route_is_404(api: str, services: Services) -> None:
    token = issue_token(ALICE, services.settings)
    response = httpx.get(f"{api}/chats/list", headers=_auth(token), timeout=10)  # list is POST only
    assert response.status_code == 404


def test_token_command_prints_a_token_for_the_user(capsys: pytest.CaptureFixture[str]) -> None:
    from worldmm.config import get_settings

    assert cli_main(["token", "--user-id", ALICE, "--ttl", "60"]) == 0
    token = capsys.readouterr().out.strip()
    settings = get_settings()
    claims = jwt.decode(
        token,
        gateway_keys(settings).token,
        algorithms=["HS256"],
        audience=settings.jwt_audience,
        issuer=settings.jwt_issuer,
    )
    assert claims["sub"] == ALICE and claims["exp"] - claims["iat"] == 60


def test_serve_unknown_path_is_404_with_api_gateway_body(api: str, services: Services) -> None:
    token = issue_token(ALICE, services.settings)
    response = httpx.post(f"{api}/nowhere", headers=_auth(token), timeout=10)
    assert response.status_code == 404 and response.json() == {"message": "Not Found"}


def test_a_path_no_route_can_hold_is_the_same_json_404(api: str, services: Services) -> None:
    # A newline in a path parameter matches no route at all (schemathesis found Starlette's text/plain 404).
    token = issue_token(ALICE, services.settings)
    response = httpx.get(f"{api}/memories/a%0Ab", headers=_auth(token), timeout=10)
    assert response.status_code == 404 and response.json() == {"message": "Not Found"}


def _template_routes() -> set[tuple[str, str, str]]:
    resources = load_template()["Resources"]
    found = set()
    for name, resource in resources.items():
        for event in (resource.get("Properties", {}).get("Events") or {}).values():
            if event.get("Type") == "HttpApi":
                props = event["Properties"]
                found.add((name, props["Method"].upper(), props["Path"]))
    # The MCP endpoint is no REST route: the gateway mounts it at the same path (tests/integration/test_mcp.py).
    found.remove(("McpFunction", "POST", MCP_PATH))
    return found


def test_gateway_serves_exactly_the_http_routes_template_yaml_declares() -> None:
    # GIVEN the template's HttpApi events (function, method, path) and the gateway's route table
    declared = _template_routes()
    served = {(r.function, r.method, r.path) for r in ROUTES}
    # THEN they are the same set, and each route's handler is the function's Handler in the template
    assert served == declared
    resources = load_template()["Resources"]
    for route in ROUTES:
        assert resources[route.function]["Properties"]["Handler"] == f"{route.handler}.lambda_handler"


def test_openapi_json_is_committed_served_and_generated_from_the_models(api: str) -> None:
    # GIVEN the document generated from the route table's pydantic models
    from worldmm.gateway.openapi import openapi_document, render

    document = openapi_document()
    # THEN the committed openapi.json and docs/openapi.json are that document (regenerate: python -m
    # worldmm.gateway.openapi)
    for committed in ("openapi.json", "docs/openapi.json"):
        assert (ROOT / committed).read_text() == render(), f"{committed} drifted: regenerate it"
    # AND the gateway serves it without a token
    served = httpx.get(f"{api}/openapi.json", timeout=10)
    assert served.status_code == 200 and served.json() == json.loads(render())
    # AND it names every template route and every request and response model's fields
    # (but those marked local-only: `worldmm serve`'s event stream, EventBridge on aws)
    from worldmm.gateway.openapi import LOCAL_ONLY

    operations_of = [(p, m, op) for p, ops in document["paths"].items() for m, op in ops.items()]
    local_only = {(m.upper(), p) for p, m, op in operations_of if op.get(LOCAL_ONLY)}
    assert local_only == {("GET", "/events")}
    paths = {(m.upper(), p) for p, m, _ in operations_of} - local_only
    assert paths == {(m, p) for _, m, p in _template_routes()}
    # AND each operation is named after the template function that serves it
    operations = {
        (op["operationId"] + "Function", m.upper(), p) for p, m, op in operations_of if not op.get(LOCAL_ONLY)
    }
    assert operations == _template_routes()
    schemas = document["components"]["schemas"]
    for route in ROUTES:
        for model in (route.body, route.response):
            if model is not None:
                assert set(schemas[model.__name__]["properties"]) == set(model.model_fields) | set(
                    model.model_computed_fields
                )
