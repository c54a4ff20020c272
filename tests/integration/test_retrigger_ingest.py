"""RetriggerIngestFunction: pending, force, explicit, badInput, and the DynamoDB fallback."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import boto3
import pytest

from tests.support.harness import make_settings
from tests.support.ingest import (
    SESSION,
    USER,
    lambda_context,
    make_ingest_services,
    put_session,
    put_window,
    script_window_models,
    window_segment,
)
from worldmm.db.engine import Database
from worldmm.db.models import ProcessingStatus, Segment
from worldmm.ingest.events import RetriggerEvent
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.ingest.retrigger import retrigger
from worldmm.services import Services, local_handlers, set_services

pytestmark = pytest.mark.integration

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


def add_segment(db, index: int, status: ProcessingStatus) -> None:
    with db.unit_of_work(USER) as session:
        session.add(
            Segment(
                id=uuid.uuid4(),
                user_id=USER,
                session_id=SESSION,
                window_index=index,
                duration_seconds=30,
                start_time=T0,
                end_time=T0,
                processing_status=status,
            )
        )


@pytest.fixture
def svc(settings, db, scripted_llm, tmp_path):
    services = make_ingest_services(settings, db, scripted_llm, tmp_path)
    put_session(services.store)
    for i in range(4):  # the store knows windows 0-3
        put_window(services.store, index=i, frames=2)
    return services


def invoked(svc) -> list[dict]:
    return [payload for name, payload in svc.invoker.invocations if name == "IngestWindowFunction"]


def test_retrigger_pending_triggers_non_complete_windows_only(svc, db):
    # GIVEN window 0 complete, 1 pending, 2 failed, 3 never ingested
    add_segment(db, 0, ProcessingStatus.COMPLETE)
    add_segment(db, 1, ProcessingStatus.PENDING)
    add_segment(db, 2, ProcessingStatus.FAILED)
    # WHEN retriggered without force
    out = retrigger(svc, RetriggerEvent(sessionId=SESSION, userId=USER))
    # THEN every non-complete window is invoked asynchronously with an IngestWindowEvent
    assert out.model_dump() == {"triggered": [1, 2, 3], "skipped": [0]}
    assert invoked(svc)[0] == {"sessionId": SESSION, "userId": USER, "windowIndex": 1, "frameCount": 0}


def test_retrigger_force_resets_complete_segments_to_pending(svc, db):
    add_segment(db, 0, ProcessingStatus.COMPLETE)
    add_segment(db, 1, ProcessingStatus.COMPLETE)
    out = retrigger(svc, RetriggerEvent(sessionId=SESSION, userId=USER, force=True))
    assert out.triggered == [0, 1, 2, 3] and out.skipped == []
    seg = window_segment(db, index=0)
    assert seg is not None and seg.processing_status == ProcessingStatus.PENDING


def test_retrigger_explicit_window_indices_bypass_lookup(svc, db):
    add_segment(db, 0, ProcessingStatus.COMPLETE)
    out = retrigger(svc, RetriggerEvent(sessionId=SESSION, userId=USER, windowIndices=[7, 2, 7]))
    assert out.model_dump() == {"triggered": [2, 7], "skipped": []}
    assert [p["windowIndex"] for p in invoked(svc)] == [2, 7]


def test_retrigger_bad_input_returns_400(svc):
    from handlers.events.retrigger_ingest import lambda_handler

    set_services(svc)
    try:
        out = lambda_handler({"sessionId": SESSION}, lambda_context())
        ok = lambda_handler({"sessionId": SESSION, "userId": USER, "windowIndices": [1]}, lambda_context())
    finally:
        set_services(None)
    assert out["statusCode"] == 400 and "userId" in json.loads(out["body"])["fields"]
    assert ok == {"triggered": [1], "skipped": []}


def test_retrigger_falls_back_to_dynamodb_windows_when_database_fails(aws):
    # GIVEN the aws profile, a sessions table item, and a database that cannot be reached
    ddb = boto3.client("dynamodb")
    ddb.create_table(
        TableName="encache-sessions",
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "sessionId", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "sessionId", "AttributeType": "S"}],
    )
    boto3.resource("dynamodb").Table("encache-sessions").put_item(
        Item={
            "sessionId": SESSION,
            "userId": USER,
            "createdAt": "2026-05-01T10:00:00Z",
            "windowCount": 3,
            "frameCounts": {"1": 16},
        }
    )
    settings = make_settings(
        worldmm_profile="aws", database_url="postgresql+psycopg://nobody@127.0.0.1:1/none"
    )
    svc = Services(settings, db=Database(settings.database_url or ""), invoker=InProcessInvoker())
    # WHEN retriggered (pending)
    out = retrigger(svc, RetriggerEvent(sessionId=SESSION, userId=USER))
    # THEN the windows come from DynamoDB, with their frame counts
    assert out.triggered == [0, 1, 2]
    assert [p["frameCount"] for p in invoked(svc)] == [0, 16, 0]


def test_retrigger_force_through_local_dispatch_re_enriches_the_window(svc, db, scripted_llm):
    # GIVEN a complete window and the local profile's in-process function table
    script_window_models(scripted_llm)
    svc.__dict__["invoker"] = InProcessInvoker(local_handlers(svc))
    retrigger(svc, RetriggerEvent(sessionId=SESSION, userId=USER, windowIndices=[0]))
    first = window_segment(db, index=0)
    assert first is not None and first.caption is not None
    script_window_models(scripted_llm, caption="I drink tea with Kate.")
    # WHEN forced
    retrigger(svc, RetriggerEvent(sessionId=SESSION, userId=USER, windowIndices=[0], force=True))
    # THEN the window was re-enriched in-process with the new caption
    seg = window_segment(db, index=0)
    assert seg is not None and seg.processing_status == ProcessingStatus.COMPLETE
    assert seg.caption == "I drink tea with Kate."
