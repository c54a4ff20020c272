"""IngestDLQConsumer (sqs_handler): GPU down → visibility extended + item failed; GPU up → delegate."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import boto3
import pytest

from tests.support.ingest import (
    SESSION,
    USER,
    failing,
    lambda_context,
    make_ingest_services,
    put_session,
    put_window,
    script_window_models,
    window_segment,
)
from worldmm.db.models import ProcessingStatus
from worldmm.services import set_services

pytestmark = pytest.mark.integration

WINDOW_EVENT = {"sessionId": SESSION, "userId": USER, "windowIndex": 0, "frameCount": 20}


@pytest.fixture
def queue(aws):
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="ingest-dlq")["QueueUrl"]
    return sqs, url


def receive_as_event(sqs, url, body: dict, receive_count: int = 1) -> dict:
    """Put `body` on the queue, receive it (visible again at once), and wrap it as a Lambda SQS event."""
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body))
    msg = sqs.receive_message(QueueUrl=url, VisibilityTimeout=0, MaxNumberOfMessages=1)["Messages"][0]
    record = {
        "messageId": msg["MessageId"],
        "receiptHandle": msg["ReceiptHandle"],
        "body": msg["Body"],
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": "0",
            "SenderId": "x",
            "ApproximateFirstReceiveTimestamp": "0",
        },
        "messageAttributes": {},
        "md5OfBody": msg["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:ingest-dlq",
        "awsRegion": "us-east-1",
    }
    return {"Records": [record]}


def on_failure_record(payload: dict) -> dict:
    """What Lambda's OnFailure SQS destination writes for a failed async invoke."""
    return {
        "version": "1.0",
        "requestContext": {"condition": "RetriesExhausted"},
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
        "responsePayload": {"errorType": "GpuUnavailableError"},
    }


def consumer_services(settings, db, llm, tmp_path, url, gpu_url):
    update = {"ingest_requires_gpu": True, "ingest_dlq_url": url, "gpu_worker_url": gpu_url}
    svc = make_ingest_services(settings.model_copy(update=update), db, llm, tmp_path)
    put_session(svc.store)
    put_window(svc.store)
    set_services(svc)
    return svc


def test_ingest_dlq_consumer_gpu_down_extends_visibility_and_reports_failure(
    settings, db, scripted_llm, tmp_path, queue, caplog
):
    from handlers.events.ingest_window import sqs_handler

    sqs, url = queue
    consumer_services(settings, db, scripted_llm, tmp_path, url, gpu_url=None)
    event = receive_as_event(sqs, url, on_failure_record(WINDOW_EVENT))
    try:
        with caplog.at_level(logging.INFO):
            out = sqs_handler(event, lambda_context())
    finally:
        set_services(None)
    # THEN the item is failed (back to the queue) and hidden for 900 s: not receivable now
    assert out == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages") is None
    extended = [r for r in caplog.records if getattr(r, "step", None) == "dlq_visibility_extended"]
    assert extended and extended[0].extended_seconds == 900 and extended[0].reason == "gpu_unavailable"
    assert scripted_llm.calls == []


def test_ingest_dlq_consumer_gpu_up_delegates_to_window_ingest(settings, db, scripted_llm, tmp_path, queue):
    from handlers.events.ingest_window import sqs_handler

    sqs, url = queue
    script_window_models(scripted_llm)
    consumer_services(settings, db, scripted_llm, tmp_path, url, gpu_url="http://10.0.0.9:8000")
    event = receive_as_event(sqs, url, on_failure_record(WINDOW_EVENT))
    try:
        out = sqs_handler(event, lambda_context())
    finally:
        set_services(None)
    assert out == {"batchItemFailures": []}
    seg = window_segment(db)
    assert seg is not None and seg.processing_status == ProcessingStatus.COMPLETE and seg.enriched


def test_ingest_dlq_consumer_other_exception_returns_message_without_extension(
    settings, db, scripted_llm, tmp_path, queue
):
    from handlers.events.ingest_window import sqs_handler

    sqs, url = queue
    script_window_models(scripted_llm).queue("caption", [failing("model exploded")])
    consumer_services(settings, db, scripted_llm, tmp_path, url, gpu_url="http://10.0.0.9:8000")
    event = receive_as_event(sqs, url, WINDOW_EVENT)  # a bare event body is accepted too
    try:
        out = sqs_handler(event, lambda_context())
    finally:
        set_services(None)
    assert len(out["batchItemFailures"]) == 1
    # visibility untouched (0 from the receive): the message is immediately receivable again
    assert len(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]) == 1
    seg = window_segment(db)
    assert seg is not None and seg.processing_status == ProcessingStatus.FAILED


def test_ingest_dlq_consumer_has_no_receive_count_cap(settings, db, scripted_llm, tmp_path, queue):
    from handlers.events.ingest_window import sqs_handler

    sqs, url = queue
    script_window_models(scripted_llm)
    consumer_services(settings, db, scripted_llm, tmp_path, url, gpu_url="http://10.0.0.9:8000")
    event = receive_as_event(sqs, url, on_failure_record(WINDOW_EVENT), receive_count=57)
    try:
        out = sqs_handler(event, lambda_context())
    finally:
        set_services(None)
    assert out == {"batchItemFailures": []}
    assert window_segment(db) is not None


def test_ingest_dlq_consumer_window_in_progress_keeps_the_message(
    settings, db, scripted_llm, tmp_path, queue
):
    from handlers.events.ingest_window import sqs_handler
    from worldmm.ingest.enrichment import claim_segment

    # GIVEN another invocation holds a live claim on the window
    sqs, url = queue
    svc = consumer_services(settings, db, scripted_llm, tmp_path, url, gpu_url="http://10.0.0.9:8000")
    start = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    claim_segment(
        svc,
        user_id=USER,
        session_id=SESSION,
        window_index=0,
        duration_seconds=30,
        start_time=start,
        end_time=start + timedelta(seconds=30),
    )
    event = receive_as_event(sqs, url, on_failure_record(WINDOW_EVENT))
    try:
        out = sqs_handler(event, lambda_context())
    finally:
        set_services(None)
    # THEN the item is reported failed so SQS redelivers it later, rather than being dropped
    assert len(out["batchItemFailures"]) == 1
