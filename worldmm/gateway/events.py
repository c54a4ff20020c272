"""Requests as the Lambda handlers receive them: API Gateway HTTP API (payload v2) events and a context."""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit


def _claim_text(value: Any) -> str:
    # API Gateway hands claims to the function as strings (arrays as "[a b]").
    if isinstance(value, list):
        return "[" + " ".join(str(v) for v in value) + "]"
    return value if isinstance(value, str) else json.dumps(value)


def build_event(
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
    claims: dict[str, Any],
    *,
    source_ip: str = "127.0.0.1",
    route_key: str | None = None,
    path_parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The API Gateway HTTP API v2 event for one request (route key, path, query, body, JWT claims)."""
    url = urlsplit(target)
    path = url.path or "/"
    route_key = route_key or f"{method} {path}"
    query = parse_qs(url.query, keep_blank_values=True)
    now = datetime.now(UTC)
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        text_body: str | None = body.decode("utf-8") if body else None
        is_base64 = False
    except UnicodeDecodeError:
        text_body, is_base64 = base64.b64encode(body).decode("ascii"), True
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": url.query,
        "headers": lowered,
        "requestContext": {
            "accountId": "local",
            "apiId": "local",
            "authorizer": {"jwt": {"claims": {k: _claim_text(v) for k, v in claims.items()}, "scopes": None}},
            "domainName": lowered.get("host", "localhost"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": is_base64,
    }
    if query:
        event["queryStringParameters"] = {k: ",".join(v) for k, v in query.items()}
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if text_body is not None:
        event["body"] = text_body
    return event


@dataclass
class LocalLambdaContext:
    """The parts of the Lambda context object handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timeout_s: float = 30.0
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:000000000000:function:{self.function_name}"

    @property
    def function_version(self) -> str:
        return "$LATEST"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return "local"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_s - (time.monotonic() - self.started)) * 1000))


def from_lambda_response(result: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """A handler's proxy response as (status, headers, body bytes)."""
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    headers = {k: str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name] = ", ".join(str(v) for v in values)
    return int(result.get("statusCode", 200)), headers, body
