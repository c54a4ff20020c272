"""Capture handlers end to end on moto: HTTP API routes, the S3-notification consumer, the sweeper."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.capture import create_capture_resources, http_event, lambda_context, s3_notification
from tests.support.harness import make_settings
from worldmm.config import Settings
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.services import Services, get_services, set_services

pytestmark = pytest.mark.integration


@pytest.fixture
def deployed(aws: None) -> Iterator[tuple[Settings, InProcessInvoker]]:
    """Process Services on moto tables with a recording invoker (what a warm Lambda holds)."""
    settings = make_settings(capture_expected_frames=2)
    create_capture_resources(settings)
    invoker = InProcessInvoker()
    set_services(Services(settings, invoker=invoker))
    yield settings, invoker
    set_services(None)


def call(
    module: Any, method: str, path: str, *, sub: str | None = "alice", body: Any = None, **params: str
) -> tuple[int, dict[str, Any]]:
    response = module.lambda_handler(
        http_event(method, path, sub=sub, body=body, path_parameters=params), lambda_context()
    )
    return response["statusCode"], json.loads(response["body"])


def start(sub: str = "alice") -> str:
    from handlers.http.capture.start import app

    status, body = call(app, "POST", "/sessions", sub=sub)
    assert status == 201
    return str(body["sessionId"])


def test_post_sessions_starts_a_session_for_the_jwt_subject(
    deployed: tuple[Settings, InProcessInvoker],
) -> None:
    from handlers.http.capture.start import app

    status, body = call(app, "POST", "/sessions")
    assert status == 201
    assert body["expectedFrames"] == 2 and body["windowSeconds"] == 30 and body["createdAt"]


def test_post_sessions_without_a_jwt_is_401(deployed: tuple[Settings, InProcessInvoker]) -> None:
    from handlers.http.capture.start import app

    status, body = call(app, "POST", "/sessions", sub=None)
    assert status == 401 and body["message"]


def test_post_frames_returns_presigned_urls(deployed: tuple[Settings, InProcessInvoker]) -> None:
    from handlers.http.capture.uploads import app

    sid = start()
    status, body = call(
        app, "POST", f"/sessions/{sid}/frames", body={"windowIndex": 0, "count": 2}, session_id=sid
    )
    assert status == 200
    # one object per URL: each key carries a nonce of its own (issue 64)
    keys = [u["key"] for u in body["uploads"]]
    assert [re.sub(r"\.[0-9a-z]{26}\.", ".", k) for k in keys] == [
        f"sessions/{sid}/window_0/frame_0000.jpg",
        f"sessions/{sid}/window_0/frame_0001.jpg",
    ]
    assert len(set(keys)) == 2


def test_post_audio_returns_a_presigned_url(deployed: tuple[Settings, InProcessInvoker]) -> None:
    from handlers.http.capture.uploads import app

    sid = start()
    status, body = call(app, "POST", f"/sessions/{sid}/audio", body={"windowIndex": 7}, session_id=sid)
    assert status == 200
    assert re.fullmatch(rf"sessions/{sid}/window_7/audio\.[0-9a-z]{{26}}\.wav", body["uploads"][0]["key"])


def test_another_users_session_is_403_on_every_route(deployed: tuple[Settings, InProcessInvoker]) -> None:
    from handlers.http.capture.end import app as end
    from handlers.http.capture.uploads import app as audio
    from handlers.http.capture.uploads import app as frames

    sid = start("alice")
    assert (
        call(
            frames,
            "POST",
            f"/sessions/{sid}/frames",
            sub="bob",
            body={"windowIndex": 0, "count": 1},
            session_id=sid,
        )[0]
        == 403
    )
    assert (
        call(audio, "POST", f"/sessions/{sid}/audio", sub="bob", body={"windowIndex": 0}, session_id=sid)[0]
        == 403
    )
    status, body = call(end, "POST", f"/sessions/{sid}/end", sub="bob", session_id=sid)
    assert status == 403 and body == {"message": "Forbidden"}


@pytest.mark.parametrize(
    "body",
    [
        "{not json",
        {"windowIndex": -1, "count": 1},
        {"count": 1},
        {"windowIndex": 0, "count": 0},
        {"windowIndex": 0, "count": 3},
        {"windowIndex": 0, "count": 1, "userId": "bob"},
    ],
)
def test_post_frames_with_invalid_input_is_400(
    deployed: tuple[Settings, InProcessInvoker], body: Any
) -> None:
    from handlers.http.capture.uploads import app

    sid = start()
    status, payload = call(app, "POST", f"/sessions/{sid}/frames", body=body, session_id=sid)
    assert status == 400 and payload["message"]


def test_post_end_closes_open_windows_and_invokes_ingest(deployed: tuple[Settings, InProcessInvoker]) -> None:
    from handlers.http.capture.end import app
    from worldmm.capture.s3_events import record_notification

    settings, invoker = deployed
    sid = start()
    record_notification(
        s3_notification(settings.frames_bucket, f"sessions/{sid}/window_0/frame_0000.jpg"), get_services().capture
    )
    status, body = call(app, "POST", f"/sessions/{sid}/end", session_id=sid)
    assert status == 200 and body["closedWindows"] == [0]
    assert invoker.invocations == [
        (
            settings.ingest_function_name,
            {"sessionId": sid, "userId": "alice", "windowIndex": 0, "frameCount": 1},
        )
    ]


def test_upload_notifications_consumer_reports_only_failed_records(
    deployed: tuple[Settings, InProcessInvoker],
) -> None:
    # GIVEN an SQS batch: a full window's notifications, an S3 test event, and a corrupt body
    from handlers.events import capture_uploads

    settings, invoker = deployed
    sid = start()
    keys = [
        f"sessions/{sid}/window_0/frame_0000.jpg",
        f"sessions/{sid}/window_0/frame_0001.jpg",
        f"sessions/{sid}/window_0/audio.wav",
    ]
    bodies = [
        json.dumps(s3_notification(settings.frames_bucket, *keys)),
        json.dumps({"Event": "s3:TestEvent"}),
        "{corrupt",
    ]
    event = {
        "Records": [
            {
                "messageId": f"m{i}",
                "receiptHandle": "r",
                "body": b,
                "attributes": {},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q",
                "awsRegion": "us-east-1",
            }
            for i, b in enumerate(bodies)
        ]
    }
    # WHEN the consumer runs
    response = capture_uploads.lambda_handler(event, lambda_context())
    # THEN the window closed once and only the corrupt record goes back to the queue
    assert response == {"batchItemFailures": [{"itemIdentifier": "m2"}]}
    assert [name for name, _ in invoker.invocations] == [settings.ingest_function_name]


def test_sweeper_handler_closes_overdue_windows(
    deployed: tuple[Settings, InProcessInvoker], monkeypatch: pytest.MonkeyPatch
) -> None:
    from handlers.events import capture_sweeper
    from worldmm.capture.s3_events import record_notification

    settings, invoker = deployed
    sid = start()
    service = get_services().capture
    record_notification(s3_notification(settings.frames_bucket, f"sessions/{sid}/window_3/audio.wav"), service)
    monkeypatch.setattr(service, "clock", lambda: 4_000_000_000.0)
    result = capture_sweeper.lambda_handler({"source": "aws.events"}, lambda_context())
    assert result["closedWindows"] == [{"windowIndex": 3, "frameCount": 0, "reason": "timeout"}]
    assert invoker.invocations[0][1]["frameCount"] == 0
