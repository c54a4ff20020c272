"""Spec 000 event and result shapes; session metadata parsing; DLQ message bodies."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from tests.support.harness import make_settings
from worldmm.ingest.catalog.port import info_from_item, parse_timestamp
from worldmm.ingest.dlq import window_event_from_body
from worldmm.ingest.events import IngestWindowEvent, RetriggerEvent
from worldmm.ingest.settings import IngestSettings

pytestmark = pytest.mark.unit


def test_ingest_events_window_event_requires_every_spec_field():
    ok = IngestWindowEvent.model_validate(
        {"sessionId": "s", "userId": "u", "windowIndex": 2, "frameCount": 0}
    )
    assert ok.model_dump() == {"sessionId": "s", "userId": "u", "windowIndex": 2, "frameCount": 0}
    for missing in ("sessionId", "userId", "windowIndex", "frameCount"):
        payload = {"sessionId": "s", "userId": "u", "windowIndex": 2, "frameCount": 0}
        del payload[missing]
        with pytest.raises(ValidationError):
            IngestWindowEvent.model_validate(payload)


def test_ingest_events_retrigger_event_optional_fields_default():
    event = RetriggerEvent.model_validate({"sessionId": "s", "userId": "u"})
    assert event.windowIndices is None and event.force is False
    with pytest.raises(ValidationError):
        RetriggerEvent.model_validate({"sessionId": "", "userId": "u"})


def test_ingest_events_dlq_body_accepts_on_failure_record_and_bare_event():
    event = {"sessionId": "s", "userId": "u", "windowIndex": 1, "frameCount": 16}
    assert window_event_from_body(json.dumps({"requestPayload": event, "version": "1.0"})).windowIndex == 1
    assert window_event_from_body(json.dumps(event)).frameCount == 16


def test_ingest_events_session_timestamps_accept_iso_and_epochs():
    expected = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    assert parse_timestamp("2026-05-01T10:00:00Z") == expected
    assert parse_timestamp(expected.timestamp()) == expected
    assert parse_timestamp(int(expected.timestamp() * 1000)) == expected
    assert parse_timestamp("not a date") is None
    info = info_from_item(
        "s", {"video_start_ms": expected.timestamp() * 1000, "windowCount": 2, "frameCounts": {"3": 16}}
    )
    assert info.created_at == expected and info.windows() == {0: 0, 1: 0, 3: 16}


def test_ingest_events_gpu_required_defaults_to_aws_profile():
    assert IngestSettings.of(make_settings(worldmm_profile="aws")).gpu_required is True
    assert IngestSettings.of(make_settings(worldmm_profile="local")).gpu_required is False
    assert IngestSettings.of(make_settings(worldmm_profile="local", ingest_requires_gpu=True)).gpu_required is True
