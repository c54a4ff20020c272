"""Spec 004 through the real Lambda handlers: every path of every table and the §3 security invariants.

Requests are API Gateway HTTP API v2 events (built as `worldmm serve` builds them); the chat store is
the PostgreSQL adapter on the test database; the reasoning agent is real, its LLM scripted.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode

import pytest
from ulid import ULID

from handlers.http.chats.list.app import lambda_handler as list_handler
from handlers.http.chats.messages.app import lambda_handler as messages_handler
from handlers.http.memories.chat.app import lambda_handler as chat_handler
from handlers.http.memories.chat.app import lambda_handler as verbose_handler
from tests.support.harness import make_settings
from worldmm.chat.service import GPU_STARTING_ANSWER
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.errors import GpuUnavailableError
from worldmm.gateway.events import LocalLambdaContext, build_event
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE = "user-alice"
BOB = "user-bob"
ANSWER = "You left your keys on the hall table."
UNKNOWN_CHAT = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def llm(scripted_llm: ScriptedLLM) -> ScriptedLLM:
    """The agent answers at once; the answer prompt returns a fixed text."""
    scripted_llm.script("reasoning_agent", {"action": "ANSWER"})
    scripted_llm.script("response", {"answer": ANSWER})
    return scripted_llm


def _invoke(
    handler: Any,
    method: str,
    path: str,
    *,
    user: str | None,
    body: Any = None,
    query: dict[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    target = path + (f"?{urlencode(query)}" if query else "")
    raw = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    claims = {"sub": user, "iss": "worldmm-local", "aud": "worldmm"} if user else {}
    event = build_event(method, target, {"content-type": "application/json"}, raw, claims)
    if not user:
        # API Gateway sends no authorizer block when no identity was established.
        event["requestContext"].pop("authorizer")
    response = handler(event, LocalLambdaContext(function_name="test"))
    return response["statusCode"], json.loads(response["body"])


def chat(user: str | None, body: Any) -> tuple[int, dict[str, Any]]:
    return _invoke(chat_handler, "POST", "/memories/chat", user=user, body=body)


def chat_verbose(user: str | None, body: Any) -> tuple[int, dict[str, Any]]:
    return _invoke(verbose_handler, "POST", "/memories/chat/verbose", user=user, body=body)


def list_chats(user: str | None, body: Any = None) -> tuple[int, dict[str, Any]]:
    return _invoke(list_handler, "POST", "/chats/list", user=user, body=body)


def get_messages(user: str | None, **query: Any) -> tuple[int, dict[str, Any]]:
    return _invoke(messages_handler, "GET", "/chats/messages", user=user, query=query)


def _stored(services: Services, user: str, chat_id: str) -> list[tuple[str, str]]:
    page = services.chats.get_messages(user, chat_id, limit=50)
    return [(m.role, m.content) for m in reversed(page.messages)]


def _chat_count(services: Services, user: str) -> int:
    return len(services.chats.list_chats(user, limit=50).conversations)


# --- chatWithMemory ---------------------------------------------------------------------------------


def test_chat_new_answers_and_saves_both_messages(services: Services, llm: ScriptedLLM) -> None:
    # WHEN Alice asks without a chat_id
    status, body = chat(ALICE, {"question": "Where are my keys?"})
    # THEN she gets the agent's answer and a new chat holding her question and the answer
    assert status == 200
    assert body == {"answer": ANSWER, "chat_id": body["chat_id"]} and body["chat_id"]
    assert _stored(services, ALICE, body["chat_id"]) == [
        ("user", "Where are my keys?"),
        ("assistant", ANSWER),
    ]
    assert len(llm.calls_for("response")) == 1


def test_chat_existing_appends_to_the_owned_chat(services: Services, llm: ScriptedLLM) -> None:
    # GIVEN Alice's chat
    _, first = chat(ALICE, {"question": "Where are my keys?"})
    # WHEN she asks again in it
    status, body = chat(ALICE, {"question": "And my wallet?", "chat_id": first["chat_id"]})
    # THEN the same chat holds all four messages, and no second chat was made
    assert status == 200 and body == {"answer": ANSWER, "chat_id": first["chat_id"]}
    assert [c for _, c in _stored(services, ALICE, first["chat_id"])] == [
        "Where are my keys?",
        ANSWER,
        "And my wallet?",
        ANSWER,
    ]
    assert _chat_count(services, ALICE) == 1


def test_chat_unauthorized_chat_of_another_user_is_403_before_anything_runs(
    services: Services, llm: ScriptedLLM
) -> None:
    # GIVEN Bob's chat
    _, bobs = chat(BOB, {"question": "What did I eat?"})
    calls_before = len(llm.calls)
    # WHEN Alice posts into it
    status, body = chat(ALICE, {"question": "Read Bob's chat", "chat_id": bobs["chat_id"]})
    # THEN 403, no model ran, Bob's chat is untouched and Alice has no chat
    assert status == 403 and body == {"message": "Forbidden"}
    assert len(llm.calls) == calls_before
    assert len(_stored(services, BOB, bobs["chat_id"])) == 2
    assert _chat_count(services, ALICE) == 0


def test_chat_gpu_starting_without_a_worker_replies_unavailable_and_writes_nothing(
    gpu_services: Callable[[str | None], Services], llm: ScriptedLLM
) -> None:
    # GIVEN answers come from the GPU worker and no worker is running
    services = gpu_services(None)
    # WHEN Alice asks
    status, body = chat(ALICE, {"question": "Where are my keys?"})
    # THEN the fixed reply with no chat_id, no model call and no chat saved
    assert status == 200 and body == {"answer": GPU_STARTING_ANSWER, "chat_id": None}
    assert llm.calls == []
    assert _chat_count(services, ALICE) == 0


def test_chat_gpu_starting_while_the_worker_loads_replies_unavailable_and_writes_nothing(
    gpu_services: Callable[[str | None], Services], llm: ScriptedLLM
) -> None:
    # GIVEN a worker on 127.0.0.1 whose /health still says "loading"
    with _health_server("loading") as url:
        services = gpu_services(url)
        # WHEN Alice asks in a new chat
        status, body = chat(ALICE, {"question": "Where are my keys?"})
    # THEN the fixed reply, nothing written
    assert status == 200 and body == {"answer": GPU_STARTING_ANSWER, "chat_id": None}
    assert llm.calls == [] and _chat_count(services, ALICE) == 0


def test_chat_with_a_ready_gpu_worker_answers_and_saves(
    gpu_services: Callable[[str | None], Services], llm: ScriptedLLM
) -> None:
    # GIVEN a worker whose /health says "ready"
    with _health_server("ready") as url:
        services = gpu_services(url)
        status, body = chat(ALICE, {"question": "Where are my keys?"})
    # THEN the agent answered and the chat was saved
    assert status == 200 and body["answer"] == ANSWER and body["chat_id"]
    assert _chat_count(services, ALICE) == 1


def test_chat_gpu_starting_when_the_worker_drops_mid_answer_writes_nothing(
    gpu_services: Callable[[str | None], Services], llm: ScriptedLLM
) -> None:
    # GIVEN a worker that reports ready but fails the answering call
    def worker_gone(request: LLMRequest) -> str:
        raise GpuUnavailableError("GPU worker unavailable after 1 attempts")

    llm.script("reasoning_agent", worker_gone)
    with _health_server("ready") as url:
        services = gpu_services(url)
        status, body = chat(ALICE, {"question": "Where are my keys?"})
    # THEN the same "not available" reply, and no chat or message was saved
    assert status == 200 and body == {"answer": GPU_STARTING_ANSWER, "chat_id": None}
    assert _chat_count(services, ALICE) == 0


@pytest.mark.parametrize(
    "payload",
    [{"question": ""}, {"question": "   "}, {}, {"question": None}, b"{not json", b""],
    ids=["empty", "blank", "absent", "null", "invalid-json", "no-body"],
)
def test_chat_missing_question_is_400_and_writes_nothing(
    services: Services, llm: ScriptedLLM, payload: Any
) -> None:
    status, body = chat(ALICE, payload)
    assert status == 400 and body["message"] == "Invalid request"
    assert llm.calls == [] and _chat_count(services, ALICE) == 0


def test_chat_unauthenticated_is_401_and_writes_nothing(services: Services, llm: ScriptedLLM) -> None:
    status, body = chat(None, {"question": "Where are my keys?", "user_id": ALICE})
    assert status == 401 and body == {"message": "Unauthorized"}
    assert llm.calls == [] and _chat_count(services, ALICE) == 0


# --- chatWithMemoryVerbose --------------------------------------------------------------------------


def test_chat_verbose_new_returns_answer_chat_and_trace(services: Services, llm: ScriptedLLM) -> None:
    status, body = chat_verbose(ALICE, {"question": "Where are my keys?"})
    assert status == 200 and body["answer"] == ANSWER and body["chat_id"]
    assert [r["action"] for r in body["trace"]["rounds"]] == ["ANSWER"]
    assert body["trace"]["total_prompt_tokens"] > 0
    assert _stored(services, ALICE, body["chat_id"]) == [
        ("user", "Where are my keys?"),
        ("assistant", ANSWER),
    ]


def _verbose_received(time_epoch_ms: int | None) -> tuple[dict[str, Any], float]:
    """Alice's verbose chat through the handler, API Gateway having received it at `time_epoch_ms` (None: an event
    without `requestContext.timeEpoch`): the answer's trace, and how long the handler took (ms)."""
    raw = json.dumps({"question": "Where are my keys?"}).encode()
    claims = {"sub": ALICE, "iss": "worldmm-local", "aud": "worldmm"}
    event = build_event("POST", "/memories/chat/verbose", {"content-type": "application/json"}, raw, claims)
    event["requestContext"].pop("timeEpoch")
    if time_epoch_ms is not None:
        event["requestContext"]["timeEpoch"] = time_epoch_ms
    started = time.perf_counter()
    response = verbose_handler(event, LocalLambdaContext(function_name="test"))
    took_ms = (time.perf_counter() - started) * 1000
    assert response["statusCode"] == 200, response
    return json.loads(response["body"])["trace"], took_ms


def test_chat_verbose_answer_time_counts_from_when_the_api_received_the_request(
    services: Services, llm: ScriptedLLM
) -> None:
    # GIVEN a question API Gateway received 30 s before it reached the function (behind others, or a cold start)
    received_ms = int(time.time() * 1000) - 30_000
    # WHEN the handler answers it
    trace, took_ms = _verbose_received(received_ms)
    # THEN the answer path was given the 30 s waited: the answer's time, and so its deadline, counts them
    assert 30_000 <= trace["total_ms"] <= 30_000 + took_ms + 1_000, (trace["total_ms"], took_ms)


def test_chat_verbose_answer_time_without_a_receipt_time_counts_no_wait(services: Services, llm: ScriptedLLM) -> None:
    # GIVEN an event without `requestContext.timeEpoch` (not from API Gateway)
    # WHEN the handler answers it
    trace, took_ms = _verbose_received(None)
    # THEN the answer path was given no wait: the answer's time is within the handler's own
    assert 0 < trace["total_ms"] <= took_ms, (trace["total_ms"], took_ms)


def test_chat_verbose_existing_appends_to_the_owned_chat(services: Services, llm: ScriptedLLM) -> None:
    _, first = chat(ALICE, {"question": "Where are my keys?"})
    status, body = chat_verbose(ALICE, {"question": "And my wallet?", "chat_id": first["chat_id"]})
    assert status == 200 and body["chat_id"] == first["chat_id"] and body["trace"]["rounds"]
    assert len(_stored(services, ALICE, first["chat_id"])) == 4


def test_chat_verbose_unauthorized_chat_of_another_user_is_403(services: Services, llm: ScriptedLLM) -> None:
    _, bobs = chat(BOB, {"question": "What did I eat?"})
    status, body = chat_verbose(ALICE, {"question": "Read Bob's chat", "chat_id": bobs["chat_id"]})
    assert status == 403 and body == {"message": "Forbidden"}
    assert len(_stored(services, BOB, bobs["chat_id"])) == 2


# --- listChats --------------------------------------------------------------------------------------


def test_list_chats_success_pages_the_callers_chats_newest_activity_first(services: Services) -> None:
    # GIVEN three of Alice's chats, the oldest one active last, and one of Bob's
    first, second, third = (services.chats.create_chat(ALICE) for _ in range(3))
    services.chats.save_message(ALICE, first, "user", "Where did I park?")
    services.chats.create_chat(BOB)
    # WHEN she lists two at a time
    status, page = list_chats(ALICE, {"limit": 2})
    _, rest = list_chats(ALICE, {"limit": 2, "cursor": page["next_cursor"]})
    # THEN her chats only, newest activity first, with summaries in the spec's shape
    assert status == 200
    assert [c["id"] for c in page["conversations"]] == [first, third]
    assert [c["id"] for c in rest["conversations"]] == [second] and rest["next_cursor"] is None
    assert set(page["conversations"][0]) == {"id", "title", "last_message", "updated_at"}
    assert page["conversations"][0]["title"] == "Where did I park?"


def test_list_chats_empty_returns_no_conversations_and_no_cursor(services: Services) -> None:
    assert list_chats(ALICE) == (200, {"conversations": [], "next_cursor": None})
    assert list_chats(ALICE, {}) == (200, {"conversations": [], "next_cursor": None})


def test_list_chats_unauthenticated_is_401(services: Services) -> None:
    services.chats.create_chat(ALICE)
    assert list_chats(None, {"user_id": ALICE}) == (401, {"message": "Unauthorized"})


def test_list_chats_invalid_cursor_or_limit_is_400(services: Services) -> None:
    assert list_chats(ALICE, {"cursor": "tampered"})[0] == 400
    assert list_chats(ALICE, {"limit": 0})[0] == 400
    assert list_chats(ALICE, {"limit": "many"})[0] == 400


# --- getChatMessages --------------------------------------------------------------------------------


def test_get_messages_success_pages_newest_first(services: Services) -> None:
    # GIVEN Alice's chat with three messages
    chat_id = services.chats.create_chat(ALICE)
    for content in ("one", "two", "three"):
        services.chats.save_message(ALICE, chat_id, "user", content)
    # WHEN she reads two at a time
    status, page = get_messages(ALICE, chat_id=chat_id, limit=2)
    _, rest = get_messages(ALICE, chat_id=chat_id, limit=2, cursor=page["next_cursor"])
    # THEN newest first, in the spec's ChatMessage shape
    assert status == 200
    assert [m["content"] for m in page["messages"]] == ["three", "two"]
    assert [m["content"] for m in rest["messages"]] == ["one"] and rest["next_cursor"] is None
    assert set(page["messages"][0]) == {"message_id", "chat_id", "role", "content", "created_at"}


def test_get_messages_unauthorized_chat_of_another_user_is_403(services: Services) -> None:
    bobs = services.chats.create_chat(BOB)
    services.chats.save_message(BOB, bobs, "user", "secret")
    assert get_messages(ALICE, chat_id=bobs) == (403, {"message": "Forbidden"})


def test_get_messages_not_found_is_403_with_the_same_body_as_unauthorized(services: Services) -> None:
    bobs = services.chats.create_chat(BOB)
    unauthorized = get_messages(ALICE, chat_id=bobs)
    not_found = get_messages(ALICE, chat_id=UNKNOWN_CHAT)
    assert not_found == unauthorized == (403, {"message": "Forbidden"})


def test_get_messages_unauthenticated_is_401(services: Services) -> None:
    chat_id = services.chats.create_chat(ALICE)
    assert get_messages(None, chat_id=chat_id) == (401, {"message": "Unauthorized"})


def test_get_messages_without_chat_id_is_400(services: Services) -> None:
    assert get_messages(ALICE)[0] == 400


# --- spec 004 §3 security invariants ----------------------------------------------------------------


def test_security_user_id_comes_only_from_the_jwt_on_chat(services: Services, llm: ScriptedLLM) -> None:
    # WHEN Alice's token sends a body naming Bob
    status, body = chat(ALICE, {"question": "Where are my keys?", "user_id": BOB})
    # THEN the chat is Alice's, and Bob has nothing
    assert status == 200
    assert services.chats.chat_owned_by(ALICE, body["chat_id"])
    assert not services.chats.chat_owned_by(BOB, body["chat_id"])
    assert _chat_count(services, BOB) == 0


def test_security_user_id_comes_only_from_the_jwt_on_list_and_read(services: Services) -> None:
    bobs = services.chats.create_chat(BOB)
    assert list_chats(ALICE, {"user_id": BOB}) == (200, {"conversations": [], "next_cursor": None})
    assert get_messages(ALICE, chat_id=bobs, user_id=BOB)[0] == 403


def test_security_message_ids_are_generated_server_side(services: Services, llm: ScriptedLLM) -> None:
    # WHEN the client sends its own message_id
    forged = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
    status, body = chat(ALICE, {"question": "Where are my keys?", "message_id": forged})
    # THEN the stored ids are fresh ULIDs made by the server
    assert status == 200
    ids = [m.message_id for m in services.chats.get_messages(ALICE, body["chat_id"]).messages]
    assert len(ids) == 2 and forged not in ids
    assert all(ULID.from_str(i).timestamp > ULID.from_str(forged).timestamp for i in ids)


def test_security_ownership_is_checked_on_write_and_read(services: Services, llm: ScriptedLLM) -> None:
    # GIVEN Bob's chat
    _, bobs = chat(BOB, {"question": "What did I eat?"})
    # THEN Alice can neither write (either endpoint) nor read it
    assert chat(ALICE, {"question": "x", "chat_id": bobs["chat_id"]})[0] == 403
    assert chat_verbose(ALICE, {"question": "x", "chat_id": bobs["chat_id"]})[0] == 403
    assert get_messages(ALICE, chat_id=bobs["chat_id"])[0] == 403
    assert len(_stored(services, BOB, bobs["chat_id"])) == 2


def test_security_unknown_chat_ids_are_403_never_404(services: Services, llm: ScriptedLLM) -> None:
    assert chat(ALICE, {"question": "x", "chat_id": UNKNOWN_CHAT}) == (403, {"message": "Forbidden"})
    assert chat_verbose(ALICE, {"question": "x", "chat_id": UNKNOWN_CHAT}) == (403, {"message": "Forbidden"})
    assert get_messages(ALICE, chat_id=UNKNOWN_CHAT) == (403, {"message": "Forbidden"})
    assert llm.calls == []


# --- helpers ----------------------------------------------------------------------------------------


@pytest.fixture
def gpu_services(
    settings: Settings, db: Database, llm: ScriptedLLM
) -> Iterator[Callable[[str | None], Services]]:
    """Installs Services whose answering provider is the GPU worker at the given URL."""
    yield lambda url: _gpu_services(settings, db, llm, gpu_worker_url=url)
    set_services(None)


def _gpu_services(
    settings: Settings, db: Database, llm: ScriptedLLM, *, gpu_worker_url: str | None
) -> Services:
    gpu_settings = make_settings(
        database_url=settings.database_url,
        database_admin_url=settings.database_admin_url,
        llm_provider="gpu",
        gpu_worker_url=gpu_worker_url,
        gpu_retries=0,
        gpu_connect_timeout_s=5.0,
        gpu_read_timeout_s=5.0,
    )
    services = Services(gpu_settings, db=db, llm=llm, embedder=HashEmbedder(gpu_settings.embedding_dim))
    set_services(services)
    return services


@contextmanager
def _health_server(status: str) -> Iterator[str]:
    """A stand-in GPU worker on 127.0.0.1 whose /health reports `status`."""

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            payload = json.dumps({"status": status, "models": {}}).encode()
            self.send_response(200 if self.path == "/health" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
