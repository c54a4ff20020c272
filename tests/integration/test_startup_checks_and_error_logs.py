"""The aws profile refuses the built-in cursor signing key at start-up; the gpuException
path and the DLQ consumer's non-GPU failure log an error step; `gpu_unavailable_raised` reports what the
GPU instance parameter really holds."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import boto3
import pytest
from pydantic import ValidationError

from tests.support.harness import make_settings
from tests.support.ingest import (
    SESSION,
    USER,
    lambda_context,
    make_ingest_services,
    put_window,
    script_window_models,
    window_segment,
)
from worldmm.chat.settings import ChatSettings
from worldmm.config import LOCAL_CURSOR_SECRET, Settings
from worldmm.db.models import ProcessingStatus
from worldmm.errors import ConfigurationError, GpuRequestError, GpuUnavailableError
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.window import ingest_window, require_gpu
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

GPU = "http://10.0.0.9:8000"


def steps(caplog: pytest.LogCaptureFixture, step: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "step", None) == step]


# --- the cursor signing key -----------------------------------------------------------------------


@pytest.mark.parametrize("secret", [LOCAL_CURSOR_SECRET, "worldmm-local-development-signing-key", "short"])
def test_aws_profile_refuses_a_development_or_weak_cursor_secret_at_start_up(
    secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a function's environment in the aws profile with the built-in (or a weak) key
    monkeypatch.setenv("WORLDMM_PROFILE", "aws")
    monkeypatch.setenv("CURSOR_SECRET", secret)
    # WHEN its settings are read (every function's start) THEN it refuses to start
    with pytest.raises(ValidationError, match="CURSOR_SECRET"):
        Settings()


def test_aws_profile_without_a_cursor_secret_never_signs_with_the_built_in_key(aws: None) -> None:
    from handlers.http.chats.list.app import lambda_handler
    from tests.support.capture import http_event

    # GIVEN the chats-list function in the aws profile with no CURSOR_SECRET
    from worldmm.chat.dynamo import dynamo_table_definitions

    settings = make_settings(worldmm_profile="aws", cursor_secret=None)
    for definition in dynamo_table_definitions(ChatSettings.of(settings)):  # the tables exist: only the key is missing
        boto3.client("dynamodb", region_name="us-east-1").create_table(**definition)
    with pytest.raises(ConfigurationError):
        settings.cursor_signing_secret()
    set_services(Services(settings))
    try:
        # (a cursor to check: the key is fetched only when a cursor is signed or checked)
        from worldmm.chat.cursor import encode_cursor

        cursor = encode_cursor("a-key-from-elsewhere-0123456789abcdef", ["chats", USER], {"at": "1"})
        event = http_event("POST", "/chats/list", sub=USER, body={"cursor": cursor})
        response = lambda_handler(event, lambda_context())
    finally:
        set_services(None)
    # THEN it does not serve (no cursor signed with a public key)
    assert response["statusCode"] == 500
    # AND the local profile derives its key from the install's (never the public one); a deployment key is
    # accepted in aws
    local_key = make_settings(cursor_secret=None).cursor_signing_secret()
    assert local_key != LOCAL_CURSOR_SECRET and len(bytes.fromhex(local_key)) == 32
    strong = "k" * 40
    assert make_settings(worldmm_profile="aws", cursor_secret=strong).cursor_signing_secret() == strong


# --- log steps ------------------------------------------------------------------------------------


def test_gpu_exception_path_logs_an_error_step(settings, db, scripted_llm, tmp_path, caplog) -> None:
    # GIVEN the GPU worker present but rejecting the caption call (spec 000 ingestWindow.gpuException)
    script_window_models(scripted_llm)

    def rejected(request: Any) -> Any:
        raise GpuRequestError("GPU worker rejected caption (400)")

    scripted_llm.script("caption", rejected)
    update = {"ingest_requires_gpu": True, "gpu_worker_url": GPU}
    services = make_ingest_services(settings.model_copy(update=update), db, scripted_llm, tmp_path)
    put_window(services.store, frames=4)
    # WHEN ingested THEN the error is re-raised (to the DLQ), the row is failed and an error step is logged
    with caplog.at_level(logging.INFO), pytest.raises(GpuRequestError):
        ingest_window(services, IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=0, frameCount=4))
    (record,) = steps(caplog, "window_failed")
    assert record.levelno == logging.ERROR and record.error_type == "GpuRequestError"
    seg = window_segment(db)
    assert seg is not None and seg.processing_status == ProcessingStatus.FAILED
    assert record.segment_id == str(seg.id)


def test_dlq_consumer_non_gpu_failure_logs_an_error_step(settings, db, scripted_llm, tmp_path, caplog, aws) -> None:
    from handlers.events.ingest_window import sqs_handler

    # GIVEN a DLQ'd window whose retry fails for a reason other than the GPU
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName=f"dlq-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    script_window_models(scripted_llm)
    scripted_llm.script("caption", RuntimeError("model endpoint 500"))
    update = {"ingest_requires_gpu": True, "gpu_worker_url": GPU, "ingest_dlq_url": url}
    services = make_ingest_services(settings.model_copy(update=update), db, scripted_llm, tmp_path)
    put_window(services.store, frames=4)
    payload = {"sessionId": SESSION, "userId": USER, "windowIndex": 0, "frameCount": 4}
    record = {
        "messageId": "m-1",
        "receiptHandle": "r-1",
        "body": json.dumps({"requestPayload": payload}),
        "attributes": {"ApproximateReceiveCount": "2", "SentTimestamp": "0"},
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:dlq",
        "awsRegion": "us-east-1",
    }
    set_services(services)
    try:
        with caplog.at_level(logging.INFO):
            out = sqs_handler({"Records": [record]}, lambda_context())
    finally:
        set_services(None)
    # THEN the message goes back to the queue and the failure is an error step with its type
    assert out == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    (failed,) = steps(caplog, "dlq_retry_failed")
    assert failed.levelno == logging.ERROR and failed.error_type == "RuntimeError"


@pytest.mark.parametrize(
    ("parameter", "sentinel"),
    [("i-0123456789abcdef0", "i-0123456789abcdef0"), ("none", "none"), (None, "absent")],
)
def test_gpu_unavailable_raised_reports_the_parameter_it_read(
    aws: None, db, caplog, parameter: str | None, sentinel: str
) -> None:
    # GIVEN the aws profile and the GPU instance parameter holding a stopped-and-gone instance (or none)
    settings = make_settings(worldmm_profile="aws", gpu_worker_url=None)
    if parameter is not None:
        boto3.client("ssm", region_name="us-east-1").put_parameter(
            Name=settings.gpu_instance_param, Value=parameter, Type="String"
        )
    services = Services(settings, db=db)
    # WHEN the window's GPU gate runs THEN the step says what the parameter held, not always "none"
    with caplog.at_level(logging.INFO), pytest.raises(GpuUnavailableError) as raised:
        require_gpu(services, uuid.uuid4())
    (record,) = steps(caplog, "gpu_unavailable_raised")
    assert record.gpu_sentinel == sentinel == raised.value.sentinel
