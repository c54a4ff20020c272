"""Capture test support: moto tables and bucket shaped like template.yaml, a settable clock, HTTP events."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from worldmm.capture.dynamo import CaptureStore, capture_table_definitions
from worldmm.capture.service import CaptureService
from worldmm.capture.settings import CaptureSettings
from worldmm.config import Settings
from worldmm.ingest.invoker.local import InProcessInvoker


@dataclass
class Clock:
    """A wall clock tests move by hand."""

    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class CaptureRig:
    settings: Settings
    service: CaptureService
    invoker: InProcessInvoker
    clock: Clock
    s3: Any
    dynamodb: Any
    extra: dict[str, Any] = field(default_factory=dict)

    def ingest_calls(self) -> list[dict[str, Any]]:
        return [p for name, p in self.invoker.invocations if name == self.settings.ingest_function_name]

    def retrigger_calls(self) -> list[dict[str, Any]]:
        return [p for name, p in self.invoker.invocations if name == self.settings.retrigger_function_name]


def make_moto_dynamodb_atomic(monkeypatch: Any) -> None:
    """Make each moto DynamoDB request atomic, as every DynamoDB item write is.

    moto applies an UpdateItem as read-check-write without a lock, so racing threads can lose an ADD or pass
    a condition twice — failures DynamoDB cannot have. Serialising single requests keeps the test about the
    races between *requests* (ours to handle), not inside one.
    """
    import functools
    import threading

    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()
    for name in ("get_item", "put_item", "update_item", "delete_item", "query"):
        original = getattr(DynamoDBBackend, name)

        def locked(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with lock:
                return __original(*args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, functools.wraps(original)(locked))


def create_capture_resources(settings: Settings) -> tuple[Any, Any]:
    """The bucket, sessions table and capture-windows table (with its sparse open-window GSI), and the
    allowances table forget-me erases from."""
    import boto3
    from botocore.config import Config

    from worldmm.allowance.dynamo import allowances_table_definition

    s3 = boto3.client("s3", region_name="us-east-1", config=Config(signature_version="s3v4"))
    s3.create_bucket(Bucket=settings.frames_bucket)
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    for definition in capture_table_definitions(settings.sessions_table, settings.capture_windows_table):
        dynamodb.create_table(**definition)
    dynamodb.create_table(**allowances_table_definition(settings.allowances_table))
    return s3, dynamodb


def make_rig(settings: Settings) -> CaptureRig:
    """A CaptureService on moto with a recording invoker and a hand-driven clock."""
    s3, dynamodb = create_capture_resources(settings)
    clock = Clock()
    invoker = InProcessInvoker()
    store = CaptureStore(
        settings.sessions_table,
        settings.capture_windows_table,
        open_shards=settings.capture_open_shards,
        client=dynamodb,
    )
    service = CaptureService(CaptureSettings.of(settings), store, s3, invoker, clock=clock)
    return CaptureRig(settings, service, invoker, clock, s3, dynamodb)


def s3_notification(bucket: str, *keys: str, event_name: str = "ObjectCreated:Put") -> dict[str, Any]:
    """An S3 event notification as the bucket sends it to SQS."""
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "eventName": event_name,
                "s3": {"bucket": {"name": bucket}, "object": {"key": key, "size": 1}},
            }
            for key in keys
        ]
    }


def http_event(
    method: str,
    path: str,
    *,
    sub: str | None,
    body: Any = None,
    path_parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event behind the JWT authorizer."""
    context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "api",
        "domainName": "example.com",
        "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
        "requestId": "req",
        "routeKey": f"{method} {path}",
        "stage": "$default",
        "time": "01/Jan/2026:00:00:00 +0000",
        "timeEpoch": 0,
    }
    if sub is not None:
        context["authorizer"] = {"jwt": {"claims": {"sub": sub}, "scopes": None}}
    return {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "requestContext": context,
        "pathParameters": path_parameters or {},
        "body": body if isinstance(body, str) or body is None else json.dumps(body),
        "isBase64Encoded": False,
    }


def lambda_context() -> LambdaContext:
    """A Lambda context with the fields Powertools' logger reads."""
    context = LambdaContext()
    context._function_name = "test"
    context._memory_limit_in_mb = 128
    context._invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test"
    context._aws_request_id = "req-1"
    return context


def post_upload(upload: Any, body: bytes, *, content_type: str | None = None, **field_changes: str | None) -> int:
    """A presigned upload as the phone sends it (the API's `uploads[i]`, as a dict, a pydantic model or a generated
    client's model): a multipart POST to its `url` with its `fields` in order, then the object as `file`.
    `field_changes` replace fields (None drops one), as a tampering client would."""
    import requests

    if hasattr(upload, "to_dict"):
        upload = upload.to_dict()
    elif hasattr(upload, "model_dump"):
        upload = upload.model_dump()
    fields = {**upload["fields"], **field_changes}
    fields = {name: value for name, value in fields.items() if value is not None}
    kind = content_type or fields.get("Content-Type") or "application/octet-stream"
    response = requests.post(upload["url"], data=fields, files={"file": ("upload", body, kind)}, timeout=30)
    return int(response.status_code)
