"""The EventBridge publisher (moto): app events reach a rule's target as the documented entries, in batches
of at most 10, and a refused entry is an error (the events stay in the outbox)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from worldmm.events.eventbridge import EventBridgePublisher, EventPublishError
from worldmm.events.models import SessionProcessed, WindowProcessed

pytestmark = pytest.mark.integration

BUS = "worldmm-test-app-events"
AT = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


def window_event(index: int) -> WindowProcessed:
    return WindowProcessed(
        eventId=f"00000000-0000-0000-0000-{index:012d}", userId="user-a", sessionId="sess-1", occurredAt=AT,
        seq=index + 1, windowIndex=index, segmentId=f"seg-{index}", attempt=1, frameCount=2, enriched=True,
        visualStored=True,
    )


@pytest.fixture
def queue(aws: None) -> tuple[Any, str]:
    """A bus whose rule (source worldmm) sends every event to an SQS queue."""
    events, sqs = boto3.client("events"), boto3.client("sqs")
    events.create_event_bus(Name=BUS)
    url = sqs.create_queue(QueueName="app-events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="all", EventBusName=BUS, EventPattern=json.dumps({"source": ["worldmm"]}))
    events.put_targets(Rule="all", EventBusName=BUS, Targets=[{"Id": "q", "Arn": arn}])
    return sqs, url


def drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        got += [json.loads(m["Body"]) for m in batch]
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)]
        )
    return got


def test_events_reach_the_bus_as_source_worldmm_with_their_type_and_json_detail(queue) -> None:
    sqs, url = queue
    # WHEN 12 window events and a session event are published (two PutEvents calls and a third)
    done = SessionProcessed(
        eventId="11111111-0000-0000-0000-000000000000", userId="user-a", sessionId="sess-1", occurredAt=AT, seq=13,
        windows=12, complete=12, failed=0,
    )
    EventBridgePublisher(BUS, boto3.client("events")).publish([*(window_event(i) for i in range(12)), done])
    # THEN the rule's target receives all 13, each with its detail-type and the event as detail
    received = drain(sqs, url)
    assert sorted(r["detail-type"] for r in received) == ["SessionProcessed"] + ["WindowProcessed"] * 12
    assert {r["source"] for r in received} == {"worldmm"}
    session = next(r for r in received if r["detail-type"] == "SessionProcessed")
    assert session["detail"]["eventId"] == done.eventId and session["detail"]["complete"] == 12


class _Refusing:
    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {"FailedEntryCount": 1, "Entries": [{"ErrorCode": "InternalFailure"}] + [{}] * (len(Entries) - 1)}


def test_a_refused_entry_is_an_error_naming_its_code() -> None:
    with pytest.raises(EventPublishError, match="InternalFailure"):
        EventBridgePublisher(BUS, _Refusing()).publish([window_event(0)])
