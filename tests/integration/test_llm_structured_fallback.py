"""Structured output degrades, never fails, against OpenAI-compatible servers that lack it.

A real HTTP server on 127.0.0.1 plays three kinds of local server: one that refuses `response_format`
json_schema the way llama-cpp-python does (500 naming the field), one that refuses json_object too (400),
and one that answers a reply that is not JSON once. Questions go through the real chat-verbose handler
with the agent loop over the OpenAI-compatible adapter the settings build: 0 × 5xx for each.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from handlers.http.memories.chat.app import lambda_handler as verbose_handler
from tests.support.capture import http_event, lambda_context
from tests.support.retrieval import MemoryWriter
from worldmm.config import AgentMode, LLMProvider, Settings
from worldmm.db.engine import Database
from worldmm.llm.client import OpenAILLM, StructuredFormat
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE = "user-alice"
AGENT_MARK = "memory search agent"  # words of the reasoning_agent prompt
RESPONSE_MARK = "answering the wearer's question"  # words of the response prompt
SCHEMA_MARK = "JSON schema"  # words of the schema instruction a fallback format adds


class LocalModelServer:
    """An OpenAI-compatible chat server on 127.0.0.1 that refuses some `response_format` types.

    It answers the agent with one episodic SEARCH, then ANSWER, and the response prompt with an answer
    citing memory 1 — the JSON inside prose and a code fence where no format is enforced (as small
    models write it). `garbage_replies` first replies are not JSON at all.
    """

    def __init__(
        self,
        refuse: frozenset[str] = frozenset(),
        refusal_status: int = 500,
        garbage_replies: int = 0,
        refuse_everything: str | None = None,
    ) -> None:
        self.refuse = refuse
        self.refuse_everything = refuse_everything
        self.refusal_status = refusal_status
        self.garbage_replies = garbage_replies
        self.requests: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def formats(self) -> list[str]:
        """The `response_format` type of each chat request, in order ("none" when absent)."""
        return [(r.get("response_format") or {}).get("type", "none") for r in self.requests]

    def _reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        fmt = (body.get("response_format") or {}).get("type", "none")
        if self.refuse_everything:
            return self.refusal_status, {"error": {"message": self.refuse_everything, "type": "invalid_request_error"}}
        if fmt in self.refuse:
            # llama-cpp-python's wording (a pydantic literal error on the field), with the refusal status.
            message = (
                "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                f"'msg': \"Input should be 'text'\", 'input': '{fmt}'}}"
            )
            return self.refusal_status, {"error": {"message": message, "type": "invalid_request_error"}}
        prompt = "\n".join(str(m.get("content")) for m in body["messages"])
        if self.garbage_replies > 0:
            self.garbage_replies -= 1
            text = "Let me think about where those keys are."
        else:
            text = json.dumps(self._answer(prompt))
            if fmt == "none":
                text = f"Sure! Here it is:\n```json\n{text}\n```"
        completion = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "local"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4, "total_tokens": 0},
        }
        return 200, completion

    @staticmethod
    def _answer(prompt: str) -> dict[str, Any]:
        if AGENT_MARK in prompt:
            if "Round 1: SEARCH" in prompt:
                return {"action": "ANSWER", "memory_type": None, "query": None}
            return {"action": "SEARCH", "memory_type": "episodic", "query": "keys hall table"}
        if RESPONSE_MARK in prompt:
            return {"answer": "Your keys are on the hall table.", "cited": [1]}
        return {}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                with fake._lock:
                    fake.requests.append(body)
                    status, payload = fake._reply(body) if self.path == "/v1/chat/completions" else (404, {})
                    fake.statuses.append(status)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def __enter__(self) -> LocalModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def memory(settings: Settings, db: Database) -> Iterator[Settings]:
    """Alice's memory (one window about her keys) and loop-mode settings for an OpenAI-compatible server."""
    loop = settings.model_copy(
        update={
            "agent_mode": AgentMode.LOOP,
            "llm_provider": LLMProvider.OPENAI_COMPATIBLE,
            "agent_model": "local",
            "episodic_rerank": False,
            "llm_max_retries": 1,
        }
    )
    writer = MemoryWriter(Services(loop, db=db, embedder=HashEmbedder(loop.embedding_dim)), ALICE)
    writer.segment("I put my keys on the hall table.")
    yield loop
    set_services(None)


def _ask_twice(settings: Settings, db: Database, server: LocalModelServer) -> Services:
    """Two questions through the chat-verbose handler, over the adapter the settings build for `server`."""
    services = Services(
        settings.model_copy(update={"openai_base_url": server.base_url}),
        db=db,
        embedder=HashEmbedder(settings.embedding_dim),
    )
    set_services(services)
    for question in ("Where are my keys?", "Where did I leave my keys?"):
        response = verbose_handler(
            http_event("POST", "/memories/chat/verbose", sub=ALICE, body={"question": question}), lambda_context()
        )
        body = json.loads(response["body"])
        # THEN every answer is a 200 with the answer and its citation, never a 5xx
        assert response["statusCode"] == 200, body
        assert body["answer"] == "Your keys are on the hall table."
        trace = body["trace"]
        assert trace["mode"] == "loop" and [r["action"] for r in trace["rounds"]] == ["SEARCH", "ANSWER"]
        assert trace["rounds"][0]["query"] == "keys hall table" and trace["rounds"][0]["retrieved_ids"]
        assert len(trace["citations"]) == 1
    return services


def test_structured_output_falls_back_to_json_object_when_json_schema_is_refused(
    memory: Settings, db: Database
) -> None:
    # GIVEN a server that refuses json_schema as llama-cpp-python does (500 naming response_format)
    with LocalModelServer(refuse=frozenset({"json_schema"}), refusal_status=500) as server:
        services = _ask_twice(memory, db, server)
    # THEN json_schema was tried once, without the SDK's retries, then json_object with the schema in the
    # prompt and in the format; the base URL's format is remembered for every later call
    formats = server.formats()
    assert formats[0] == "json_schema" and formats[1:] == ["json_object"] * 6, formats
    assert server.statuses.count(500) == 1
    for request in server.requests[1:]:
        assert request["response_format"]["schema"]["type"] == "object"
        assert SCHEMA_MARK in request["messages"][-1]["content"]
    assert isinstance(services.llm, OpenAILLM)
    assert services.llm.structured_format() == StructuredFormat.JSON_OBJECT


@pytest.mark.parametrize("status", [400, 422])
def test_structured_output_falls_back_to_text_when_json_object_is_refused_too(
    memory: Settings, db: Database, status: int
) -> None:
    # GIVEN a server that takes neither json_schema nor json_object
    with LocalModelServer(refuse=frozenset({"json_schema", "json_object"}), refusal_status=status) as server:
        services = _ask_twice(memory, db, server)
    # THEN each format was refused once; the rest went as text with the schema in the prompt, and the JSON
    # the model wrapped in prose and a code fence was read and validated
    formats = server.formats()
    assert formats[:2] == ["json_schema", "json_object"] and formats[2:] == ["none"] * 6, formats
    assert server.statuses.count(status) == 2
    assert all(SCHEMA_MARK in r["messages"][-1]["content"] for r in server.requests[2:])
    assert isinstance(services.llm, OpenAILLM) and services.llm.structured_format() == StructuredFormat.TEXT


def test_a_reply_that_is_not_json_gets_one_repair(memory: Settings, db: Database) -> None:
    # GIVEN a server that takes json_schema but whose model answers prose once
    with LocalModelServer(garbage_replies=1) as server:
        _ask_twice(memory, db, server)
    # THEN the round asked once more, showing the model its reply and the error, and the answers stand
    first, repair = server.requests[0], server.requests[1]
    assert repair["messages"][: len(first["messages"])] == first["messages"]
    assert repair["messages"][-2] == {"role": "assistant", "content": "Let me think about where those keys are."}
    assert "no JSON in model output" in repair["messages"][-1]["content"]
    assert server.formats() == ["json_schema"] * 7 and set(server.statuses) == {200}


def test_a_refusal_that_does_not_name_the_format_is_not_a_format_fallback(memory: Settings, db: Database) -> None:
    # GIVEN a server that answers every request with a 400 about something else (the model is up, the
    # request is refused): the agent answers from the fixed plan's memories, composed, never a 5xx
    with LocalModelServer(refusal_status=400, refuse_everything="the prompt exceeds the context length") as server:
        services = Services(memory.model_copy(update={"openai_base_url": server.base_url}), db=db,
                            embedder=HashEmbedder(memory.embedding_dim))
        set_services(services)
        response = verbose_handler(
            http_event("POST", "/memories/chat/verbose", sub=ALICE, body={"question": "Where are my keys?"}),
            lambda_context(),
        )
    body = json.loads(response["body"])
    assert response["statusCode"] == 200, body
    assert "hall table" in body["answer"] and body["trace"]["citations"]
    assert set(server.formats()) == {"json_schema"}  # no format was given up for an unrelated refusal
