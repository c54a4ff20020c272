"""Fake model APIs on 127.0.0.1 for the adapter contract suites: OpenAI-compatible (chat, embeddings,
files, batches) and Groq transcription. They record every request and can be told to fail."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from worldmm.memory.embedding.hashing import HashEmbedder


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None
    form: dict[str, bytes] = field(default_factory=dict)


def parse_multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    """Fields of a multipart/form-data body (name → bytes)."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        fields[str(name)] = payload if isinstance(payload, bytes) else b""
    return fields


def instance_of(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A minimal value valid for a (pydantic-generated) JSON schema."""
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return instance_of(root["$defs"][name], root)
    if "anyOf" in schema:
        return instance_of(schema["anyOf"][0], root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {k: instance_of(v, root) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [instance_of(schema.get("items", {"type": "string"}), root)]
    return {"integer": 1, "number": 1.5, "boolean": True, "null": None}.get(str(kind), "fake")


def default_chat_reply(body: dict[str, Any]) -> str:
    """A schema-valid JSON answer for structured requests, an echo of the last message otherwise."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return json.dumps(instance_of(fmt["json_schema"]["schema"]))
    content = body["messages"][-1]["content"]
    return f"echo: {content if isinstance(content, str) else content[0]['text']}"


class FakeModelServer:
    """One HTTP server that speaks enough of the OpenAI and Groq APIs for the contract suites."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.worker_key: str | None = None  # set: answers a signed request signed, as the GPU worker does
        self.chat_reply: Callable[[dict[str, Any]], str] = default_chat_reply
        # Batch behaviour: polls before completion, final status, which custom ids fail, output order.
        self.batch_polls_before_done = 2
        self.batch_final_status = "completed"
        self.batch_fail_ids: Callable[[str, int], bool] = lambda custom_id, index: False
        self.batch_drop_ids: Callable[[str, int], bool] = lambda custom_id, index: False
        self.transcription: dict[str, Any] = {
            "text": " Hello there. General Kenobi.",
            "segments": [
                {"id": 0, "start": 0.0, "end": 1.5, "text": " Hello there."},
                {"id": 1, "start": 1.5, "end": 3.0, "text": " General Kenobi."},
            ],
        }
        self._failures: list[tuple[str, int, dict[str, str]]] = []
        self._files: dict[str, bytes] = {}
        self.deleted_files: list[str] = []  # what clients deleted (the bytes stay for batch_input)
        self._batches: dict[str, dict[str, Any]] = {}
        self._polls: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail_next(self, path: str, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        """The next `times` requests to `path` answer `status` (retry-after 10 ms by default)."""
        with self._lock:
            for _ in range(times):
                self._failures.append((path, status, headers or {"retry-after-ms": "10"}))

    def calls(self, path: str, method: str = "POST") -> list[Recorded]:
        return [r for r in self.requests if r.path == path and r.method == method]

    # --- request handling -------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._dispatch(self, "GET")

            def do_POST(self) -> None:
                fake._dispatch(self, "POST")

            def do_DELETE(self) -> None:
                fake._dispatch(self, "DELETE")

        return Handler

    def _dispatch(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        ctype = handler.headers.get("content-type") or ""
        record = Recorded(method, handler.path, {k.lower(): v for k, v in handler.headers.items()}, raw)
        if ctype.startswith("application/json") and raw:
            record.json = json.loads(raw)
        elif ctype.startswith("multipart/form-data"):
            record.form = parse_multipart(ctype, raw)
        with self._lock:
            self.requests.append(record)
            failure = next((f for f in self._failures if f[0] == handler.path), None)
            if failure:
                self._failures.remove(failure)
        signed_over = record.headers.get("x-worker-signature") if self.worker_key else None
        if failure:
            _, status, headers = failure
            payload = {"error": {"message": f"forced {status}", "type": "test"}}
            self._send(handler, status, payload, headers, signed_over=signed_over)
            return
        status, payload = self._route(method, handler.path, record)
        self._send(handler, status, payload, signed_over=signed_over)

    def _send(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
        *,
        signed_over: str | None = None,
    ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        if signed_over and self.worker_key:
            from worldmm.worker_signing import RESPONSE_SIGNATURE_HEADER, response_signature

            headers = {
                **(headers or {}),
                RESPONSE_SIGNATURE_HEADER: response_signature(self.worker_key, signed_over, status, data),
            }
        handler.send_response(status)
        handler.send_header(
            "content-type", "application/octet-stream" if isinstance(payload, bytes) else "application/json"
        )
        handler.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _route(self, method: str, path: str, record: Recorded) -> tuple[int, Any]:
        if method == "POST" and path == "/v1/chat/completions":
            return 200, self.completion(record.json)
        if method == "POST" and path == "/v1/embeddings":
            return 200, self._embeddings(record.json)
        if method == "POST" and path == "/v1/files":
            return 200, self._create_file(record.form["file"], "batch-input.jsonl", "batch")
        if method == "POST" and path == "/v1/batches":
            return 200, self._create_batch(record.json)
        if method == "GET" and path.startswith("/v1/batches/"):
            return 200, self._poll_batch(path.rsplit("/", 1)[-1])
        if method == "GET" and path.startswith("/v1/files/") and path.endswith("/content"):
            if path.split("/")[3] in self.deleted_files:
                return 404, {"error": {"message": "No such File object"}}
            return 200, self._files[path.split("/")[3]]
        if method == "DELETE" and path.startswith("/v1/files/"):
            file_id = path.split("/")[3]
            if file_id not in self._files or file_id in self.deleted_files:
                return 404, {"error": {"message": "No such File object"}}
            self.deleted_files.append(file_id)
            return 200, {"id": file_id, "object": "file", "deleted": True}
        if method == "POST" and path == "/openai/v1/audio/transcriptions":
            return 200, self.transcription
        return 404, {"error": {"message": f"no route {method} {path}"}}

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.chat_reply(body)
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        dim = int(body.get("dimensions") or 8)
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = HashEmbedder(dim).embed([str(t) for t in inputs])
        # Reversed, so a client that ignores `index` returns vectors in the wrong order.
        data = [{"object": "embedding", "index": i, "embedding": vectors[i]} for i in range(len(vectors))]
        return {
            "object": "list",
            "model": body["model"],
            "data": data[::-1],
            "usage": {"prompt_tokens": 3, "total_tokens": 3},
        }

    def _create_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        with self._lock:
            file_id = f"file-{len(self._files) + 1}"
            self._files[file_id] = data
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }

    def batch_input(self, batch_id: str) -> list[dict[str, Any]]:
        """The JSONL lines the client uploaded for `batch_id`."""
        data = self._files[self._batches[batch_id]["input_file_id"]]
        return [json.loads(line) for line in data.decode().splitlines() if line.strip()]

    def _create_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            batch_id = f"batch_{len(self._batches) + 1}"
            self._batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"],
                "completion_window": body["completion_window"],
                "status": "validating",
                "created_at": int(time.time()),
                "metadata": body.get("metadata"),
                "output_file_id": None,
                "error_file_id": None,
                "errors": None,
            }
            self._polls[batch_id] = 0
        return self._batches[batch_id]

    def _poll_batch(self, batch_id: str) -> dict[str, Any]:
        batch = self._batches[batch_id]
        self._polls[batch_id] += 1
        if batch["status"] in {"completed", "failed", "expired", "cancelled"}:
            return batch
        if self._polls[batch_id] <= self.batch_polls_before_done:
            batch["status"] = "in_progress"
            return batch
        if self.batch_final_status == "failed":
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [{"code": "invalid_jsonl", "message": "bad input"}]}
            return batch
        outputs, errors = [], []
        for index, line in enumerate(self.batch_input(batch_id)):
            cid = line["custom_id"]
            if self.batch_drop_ids(cid, index):
                continue
            if self.batch_fail_ids(cid, index):
                errors.append(
                    {
                        "id": f"r{index}",
                        "custom_id": cid,
                        "error": None,
                        "response": {
                            "status_code": 400,
                            "request_id": f"q{index}",
                            "body": {"error": {"message": "context too long", "type": "invalid_request_error"}},
                        },
                    }
                )
            else:
                outputs.append(
                    {
                        "id": f"r{index}",
                        "custom_id": cid,
                        "error": None,
                        "response": {
                            "status_code": 200,
                            "request_id": f"q{index}",
                            "body": self.completion(line["body"]),
                        },
                    }
                )
        outputs.reverse()  # the Batch API does not keep input order
        if outputs:
            batch["output_file_id"] = self._create_file(_jsonl(outputs), "out.jsonl", "batch_output")["id"]
        if errors:
            batch["error_file_id"] = self._create_file(_jsonl(errors), "err.jsonl", "batch_output")["id"]
        batch["status"] = self.batch_final_status
        return batch


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@contextmanager
def fake_model_server() -> Iterator[FakeModelServer]:
    server = FakeModelServer().start()
    try:
        yield server
    finally:
        server.stop()
