"""Per-user bounds on capture cost.

Sessions and windows per UTC day are counted per user in the capture state (DynamoDB on moto, the local
store through `worldmm serve`), refused past their limit with a 429 that says why and when to come back,
and erased by forget-me; a window index past a day of windows is a 400; uploads landing after a window
closed re-run its (paid) ingest a bounded number of times.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.capture import (
    create_capture_resources,
    http_event,
    lambda_context,
    make_rig,
    post_upload,
)
from tests.support.gateway import running_gateway
from tests.support.harness import make_settings
from tests.support.ingest import make_ingest_services
from worldmm.capture.models import (
    CloseReason,
    PresignAudioRequest,
    PresignFramesRequest,
    UploadedObject,
    UploadKind,
)
from worldmm.chat.dynamo import dynamo_table_definitions
from worldmm.chat.settings import ChatSettings
from worldmm.config import Profile, Settings
from worldmm.db.engine import Database
from worldmm.forget_user import forget_user
from worldmm.gateway.auth import issue_token
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

# The windows' count is what these tests bound; bytes (test_security_capture_bytes) get room to spare.
LIMITS = {"capture_max_sessions_per_day": 2, "capture_max_windows_per_day": 3, "capture_max_bytes_per_day": 2**40}


def call(module: Any, method: str, path: str, *, sub: str = "alice", body: Any = None, **params: str) -> Any:
    return module.lambda_handler(http_event(method, path, sub=sub, body=body, path_parameters=params), lambda_context())


@pytest.fixture
def deployed(aws: None, db: Database) -> Iterator[Services]:
    """A warm deployed process on moto tables, its memory on the test PostgreSQL."""
    settings = make_settings(
        worldmm_profile=Profile.AWS, database_url=db.url, capture_expected_frames=2, **LIMITS
    )
    _, dynamodb = create_capture_resources(settings)
    for definition in dynamo_table_definitions(ChatSettings.of(settings)):
        dynamodb.create_table(**definition)
    services = Services(settings, db=db, invoker=InProcessInvoker())
    set_services(services)
    yield services
    set_services(None)


def _quota_items(services: Services) -> list[dict[str, Any]]:
    import boto3

    items = boto3.client("dynamodb").scan(TableName=services.settings.sessions_table)["Items"]
    return [i for i in items if i["sessionId"]["S"].startswith("quota#")]


def test_security_sessions_and_windows_a_day_are_429_past_their_limit(deployed: Services) -> None:
    from handlers.http.capture.start import app as start
    from handlers.http.capture.uploads import app as audio
    from handlers.http.capture.uploads import app as frames

    started = [call(start, "POST", "/sessions") for _ in range(3)]
    assert [r["statusCode"] for r in started] == [201, 201, 429]
    refused = started[2]
    assert "at most 2 capture sessions a day" in json.loads(refused["body"])["message"]
    assert 0 < int(refused["headers"]["Retry-After"]) <= 86_401
    assert call(start, "POST", "/sessions", sub="bob")["statusCode"] == 201  # bob's count is his own

    sid = json.loads(started[0]["body"])["sessionId"]
    other = json.loads(started[1]["body"])["sessionId"]

    def frames_for(session: str, window: int) -> int:
        body = {"windowIndex": window, "count": 2}
        return int(call(frames, "POST", f"/sessions/{session}/frames", body=body, id=session)["statusCode"])

    def audio_for(session: str, window: int) -> int:
        body = {"windowIndex": window}
        return int(call(audio, "POST", f"/sessions/{session}/audio", body=body, id=session)["statusCode"])

    # 3 windows a day: asking again for a window already counted costs nothing, whatever the route
    assert [frames_for(sid, 0), frames_for(sid, 0), audio_for(sid, 0), frames_for(sid, 1), audio_for(other, 0)] == [
        200,
        200,
        200,
        200,
        200,
    ]
    assert [frames_for(sid, 2), audio_for(sid, 2), frames_for(other, 1)] == [429, 429, 429]
    assert [frames_for(sid, 1), audio_for(other, 0)] == [200, 200]  # windows begun still take their uploads
    last = call(frames, "POST", f"/sessions/{sid}/frames", body={"windowIndex": 9, "count": 1}, id=sid)
    assert "at most 3 capture windows a day" in json.loads(last["body"])["message"] and last["headers"]["Retry-After"]
    # a window index past a day of windows is a 400, before anything is counted
    too_far = call(frames, "POST", f"/sessions/{sid}/frames", body={"windowIndex": 2881, "count": 1}, id=sid)
    assert too_far["statusCode"] == 400 and "at most 2880" in json.loads(too_far["body"])["message"]


def test_security_forget_me_erases_the_capture_counters(deployed: Services) -> None:
    from handlers.http.capture.start import app as start
    from handlers.http.capture.uploads import app as frames

    for user in ("alice", "bob"):
        sid = json.loads(call(start, "POST", "/sessions", sub=user)["body"])["sessionId"]
        call(frames, "POST", f"/sessions/{sid}/frames", sub=user, body={"windowIndex": 0, "count": 1}, id=sid)
    assert sorted(i["userId"]["S"] for i in _quota_items(deployed)) == ["alice", "bob"]
    report = forget_user(deployed, "alice")
    assert report.deleted.get("dynamodb.capture_quotas") == 1
    assert [i["userId"]["S"] for i in _quota_items(deployed)] == ["bob"]
    # alice starts again with a full allowance
    assert call(start, "POST", "/sessions")["statusCode"] == 201
    assert call(start, "POST", "/sessions")["statusCode"] == 201


def test_security_late_uploads_rerun_a_window_a_bounded_number_of_times(aws: None) -> None:
    rig = make_rig(make_settings(capture_expected_frames=4, capture_max_window_reruns=2))
    sid = rig.service.start_session("alice").sessionId
    rig.service.record_upload(UploadedObject(session_id=sid, window_index=0, kind=UploadKind.FRAME, frame_index=0))
    rig.clock.advance(60)
    assert [w.reason for w in rig.service.sweep().closedWindows] == [CloseReason.TIMEOUT]
    late = [
        rig.service.record_upload(UploadedObject(session_id=sid, window_index=0, kind=UploadKind.FRAME, frame_index=i))
        for i in (1, 2, 1, 3)
    ] + [rig.service.record_upload(UploadedObject(session_id=sid, window_index=0, kind=UploadKind.AUDIO))]
    assert [o.status for o in late] == ["retriggered", "retriggered", "duplicate", "kept", "kept"]
    assert len(rig.ingest_calls()) == 1 and len(rig.retrigger_calls()) == 2


# --- the local profile: `worldmm serve` -----------------------------------------------------------------------


BOUNDS = {"capture_max_frame_bytes": 1000, "capture_max_audio_bytes": 3000}


@pytest.fixture
def local(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    local_settings = settings.model_copy(update={"capture_expected_frames": 2, **LIMITS, **BOUNDS})
    services = make_ingest_services(local_settings, db, scripted_llm, tmp_path / "objects", invoker=InProcessInvoker())
    yield services
    set_services(None)


def test_security_local_gateway_answers_429_and_forget_erases_its_counters(local: Services) -> None:
    headers = {"Authorization": f"Bearer {issue_token('alice', local.settings)}"}
    with running_gateway(local) as gateway, httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as c:
        started = [c.post("/sessions") for _ in range(3)]
        assert [r.status_code for r in started] == [201, 201, 429]
        assert "at most 2 capture sessions a day" in started[2].json()["message"]
        assert int(started[2].headers["retry-after"]) > 0
        sid = started[0].json()["sessionId"]
        windows = [c.post(f"/sessions/{sid}/frames", json={"windowIndex": w, "count": 1}).status_code for w in range(4)]
        assert windows == [200, 200, 200, 429]
        assert local.store.list("capture-quota/")  # the counters live in the object store
        forget_user(local, "alice")
        assert local.store.list("capture-quota/") == []
        assert c.post("/sessions").status_code == 201  # a full allowance again


# --- length-bounded uploads ------------------------------------------------------------------------------------


def test_security_s3_upload_posts_sign_a_length_range_and_the_content_type(aws: None) -> None:
    import base64

    rig = make_rig(make_settings(capture_max_frame_bytes=5000, capture_max_audio_bytes=9000))
    sid = rig.service.start_session("alice").sessionId
    frame = rig.service.presign_frames("alice", sid, PresignFramesRequest(windowIndex=0, count=1)).uploads[0]
    sound = rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0)).uploads[0]
    for upload, limit, kind in ((frame, 5000, "image/jpeg"), (sound, 9000, "audio/wav")):
        policy = json.loads(base64.b64decode(upload.fields["policy"]))
        assert ["content-length-range", 1, limit] in policy["conditions"]
        assert {"Content-Type": kind} in policy["conditions"] and {"key": upload.key} in policy["conditions"]
        assert upload.method == "POST" and upload.maxBytes == limit and upload.headers == {}
    assert post_upload(frame, b"\xff\xd8jpeg") == 204  # the bucket (moto) takes the form as S3 does
    stored = rig.s3.get_object(Bucket=rig.settings.frames_bucket, Key=frame.key)
    assert stored["Body"].read() == b"\xff\xd8jpeg"


def test_security_local_gateway_bounds_every_upload(local: Services) -> None:
    services = local
    headers = {"Authorization": f"Bearer {issue_token('alice', local.settings)}"}
    with running_gateway(services) as gateway, httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as c:
        sid = c.post("/sessions").json()["sessionId"]
        [frame] = c.post(f"/sessions/{sid}/frames", json={"windowIndex": 0, "count": 1}).json()["uploads"]
        [sound] = c.post(f"/sessions/{sid}/audio", json={"windowIndex": 0}).json()["uploads"]
        assert (frame["maxBytes"], sound["maxBytes"]) == (1000, 3000)
        assert post_upload(frame, b"x" * 1001) == 400  # EntityTooLarge
        assert post_upload(frame, b"") == 400  # EntityTooSmall
        assert not services.store.exists(frame["key"])
        assert post_upload(frame, b"x" * 1000) == 204
        assert post_upload(sound, b"x" * 3001) == 400 and post_upload(sound, b"x" * 3000) == 204
        # a PUT URL signed by this gateway is bounded by its key's kind as well
        signer = gateway.app.state.gateway.signer
        put_url = signer.generate_presigned_url("put_object", {"Key": frame["key"], "ContentType": "image/jpeg"}, 60)
        too_long = httpx.put(put_url, content=b"x" * 1001, headers={"Content-Type": "image/jpeg"}, timeout=10)
        assert too_long.status_code == 400 and b"EntityTooLarge" in too_long.content
