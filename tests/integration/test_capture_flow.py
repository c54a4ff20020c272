"""Capture flow on moto: windows close by count, by time and by session end; ingest invoked exactly once."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.capture import CaptureRig, make_moto_dynamodb_atomic, make_rig, post_upload, s3_notification
from tests.support.harness import change_settings, make_settings
from worldmm.capture.models import (
    CloseReason,
    PresignAudioRequest,
    PresignFramesRequest,
    UploadedObject,
    UploadKind,
)
from worldmm.capture.service import frame_key
from worldmm.errors import BadRequest, Forbidden
from worldmm.media.frames import window_audio_key

pytestmark = pytest.mark.integration

EXPECTED = 4


@pytest.fixture
def rig(aws: None) -> Iterator[CaptureRig]:
    yield make_rig(make_settings(capture_expected_frames=EXPECTED, capture_close_after_s=30))


def frame(session_id: str, window: int, index: int) -> UploadedObject:
    return UploadedObject(
        session_id=session_id, window_index=window, kind=UploadKind.FRAME, frame_index=index
    )


def audio(session_id: str, window: int) -> UploadedObject:
    return UploadedObject(session_id=session_id, window_index=window, kind=UploadKind.AUDIO)


def test_start_session_writes_sessions_row_with_created_at(rig: CaptureRig) -> None:
    # WHEN a user starts a session
    started = rig.service.start_session("alice")
    # THEN the sessions table holds it with the owner and createdAt ingest reads
    item = rig.dynamodb.get_item(
        TableName=rig.settings.sessions_table, Key={"sessionId": {"S": started.sessionId}}
    )
    assert item["Item"]["userId"]["S"] == "alice"
    assert item["Item"]["createdAt"]["S"] == started.createdAt
    assert started.createdAt.startswith("2027-01-15T")  # the rig's clock, UTC ISO 8601


def test_presign_frames_returns_put_urls_under_the_window_prefix(rig: CaptureRig) -> None:
    # GIVEN a session
    sid = rig.service.start_session("alice").sessionId
    # WHEN frame URLs for window 3 are asked
    result = rig.service.presign_frames("alice", sid, PresignFramesRequest(windowIndex=3, count=EXPECTED))
    # THEN each is a signed POST for sessions/{sid}/window_3/frame_NNNN.{nonce}.jpg with its content type
    assert [re.sub(r"\.[0-9a-z]{26}\.", ".", u.key) for u in result.uploads] == [
        f"sessions/{sid}/window_3/frame_{i:04d}.jpg" for i in range(4)
    ]
    assert all(u.method == "POST" and u.fields["Content-Type"] == "image/jpeg" for u in result.uploads)
    assert all(u.fields["key"] == u.key and "x-amz-signature" in u.fields for u in result.uploads)
    assert all(rig.settings.frames_bucket in u.url for u in result.uploads)


def test_presign_audio_returns_the_window_audio_key(rig: CaptureRig) -> None:
    sid = rig.service.start_session("alice").sessionId
    result = rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0))
    [key] = [u.key for u in result.uploads]
    assert re.sub(r"\.[0-9a-z]{26}\.", ".", key) == window_audio_key(sid, 0)


@pytest.mark.parametrize(
    "request_body",
    [
        {"windowIndex": 0, "count": EXPECTED + 1},
        {"windowIndex": 0, "count": 2, "start": EXPECTED - 1},
        {"windowIndex": 0, "count": 1, "contentType": "image/png"},
        {"windowIndex": 100_001, "count": 1},
    ],
)
def test_presign_frames_rejects_out_of_range_requests(rig: CaptureRig, request_body: dict[str, Any]) -> None:
    sid = rig.service.start_session("alice").sessionId
    with pytest.raises(BadRequest):
        rig.service.presign_frames("alice", sid, PresignFramesRequest.model_validate(request_body))


def test_presign_audio_rejects_a_non_wav_content_type(rig: CaptureRig) -> None:
    sid = rig.service.start_session("alice").sessionId
    with pytest.raises(BadRequest):
        rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0, contentType="audio/mp4"))


def test_another_users_session_is_forbidden_for_every_operation(rig: CaptureRig) -> None:
    # GIVEN alice's session
    sid = rig.service.start_session("alice").sessionId
    # THEN bob can neither presign into it nor end it, and an unknown id reads the same
    with pytest.raises(Forbidden):
        rig.service.presign_frames("bob", sid, PresignFramesRequest(windowIndex=0, count=1))
    with pytest.raises(Forbidden):
        rig.service.presign_audio("bob", sid, PresignAudioRequest(windowIndex=0))
    with pytest.raises(Forbidden):
        rig.service.end_session("bob", sid)
    with pytest.raises(Forbidden):
        rig.service.end_session("alice", "01NOSUCHSESSION")
    assert rig.ingest_calls() == []


def test_window_closes_by_count_and_invokes_ingest_once_with_its_frame_count(rig: CaptureRig) -> None:
    # GIVEN a session with all but one expected frame and the audio in
    sid = rig.service.start_session("alice").sessionId
    for i in range(EXPECTED - 1):
        assert rig.service.record_upload(frame(sid, 0, i)).status == "buffered"
    assert rig.service.record_upload(audio(sid, 0)).status == "buffered"
    assert rig.ingest_calls() == []
    # WHEN the last frame lands
    outcome = rig.service.record_upload(frame(sid, 0, EXPECTED - 1))
    # THEN the window closes and ingest is invoked once with the trusted owner and the frame count
    assert outcome.status == "closed"
    assert rig.ingest_calls() == [
        {"sessionId": sid, "userId": "alice", "windowIndex": 0, "frameCount": EXPECTED}
    ]
    state = rig.service.store.get_window(sid, 0)
    assert state is not None and state.close_reason == "complete"


def test_window_with_all_frames_but_no_audio_stays_open(rig: CaptureRig) -> None:
    sid = rig.service.start_session("alice").sessionId
    for i in range(EXPECTED):
        rig.service.record_upload(frame(sid, 0, i))
    assert rig.ingest_calls() == []


def test_window_closes_by_time_when_the_sweeper_runs_after_the_limit(rig: CaptureRig) -> None:
    # GIVEN a window with two frames, first upload at t0
    sid = rig.service.start_session("alice").sessionId
    rig.service.record_upload(frame(sid, 5, 0))
    rig.clock.advance(10)
    rig.service.record_upload(frame(sid, 5, 1))
    # WHEN the sweeper runs before 30 s have passed since t0, nothing closes
    rig.clock.advance(15)
    assert rig.service.sweep().closedWindows == []
    # WHEN it runs after
    rig.clock.advance(6)
    result = rig.service.sweep()
    # THEN the window closes by timeout with the frames that landed
    assert [(w.windowIndex, w.frameCount, w.reason.value) for w in result.closedWindows] == [
        (5, 2, "timeout")
    ]
    assert rig.ingest_calls() == [{"sessionId": sid, "userId": "alice", "windowIndex": 5, "frameCount": 2}]
    # AND a second sweep finds nothing left to close
    rig.clock.advance(60)
    assert rig.service.sweep().closedWindows == []
    assert len(rig.ingest_calls()) == 1


def test_audio_only_window_is_ingested_with_frame_count_zero(rig: CaptureRig) -> None:
    # GIVEN a window that received only its audio chunk
    sid = rig.service.start_session("alice").sessionId
    rig.service.record_upload(audio(sid, 2))
    # WHEN its time is up
    rig.clock.advance(31)
    rig.service.sweep()
    # THEN ingest runs the audio-only path (frameCount 0)
    assert rig.ingest_calls() == [{"sessionId": sid, "userId": "alice", "windowIndex": 2, "frameCount": 0}]


def test_end_session_closes_every_open_window_and_leaves_closed_ones(rig: CaptureRig) -> None:
    # GIVEN window 0 already closed by count, windows 1 and 2 buffering
    sid = rig.service.start_session("alice").sessionId
    for i in range(EXPECTED):
        rig.service.record_upload(frame(sid, 0, i))
    rig.service.record_upload(audio(sid, 0))
    rig.service.record_upload(frame(sid, 1, 0))
    rig.service.record_upload(audio(sid, 2))
    # WHEN the wearer ends the session
    result = rig.service.end_session("alice", sid)
    # THEN the open windows close now, each ingested once, and the session row records the end
    assert result.closedWindows == [1, 2]
    assert sorted((c["windowIndex"], c["frameCount"]) for c in rig.ingest_calls()) == [
        (0, EXPECTED),
        (1, 1),
        (2, 0),
    ]
    session = rig.service.store.get_session(sid)
    assert session is not None and session.ended_at == result.endedAt
    # AND ending again closes nothing more
    assert rig.service.end_session("alice", sid).closedWindows == []
    assert len(rig.ingest_calls()) == 3


def test_concurrent_uploads_invoke_ingest_exactly_once(
    rig: CaptureRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a session and many workers recording the same window's objects at once (with redeliveries)
    make_moto_dynamodb_atomic(monkeypatch)
    change_settings(rig.service, capture_expected_frames=12)
    sid = rig.service.start_session("alice").sessionId
    uploads = [frame(sid, 0, i) for i in range(12)] * 2 + [audio(sid, 0)] * 2
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(part: list[UploadedObject]) -> None:
        try:
            barrier.wait()
            for upload in part:
                rig.service.record_upload(upload)
            rig.service.sweep() if part is parts[0] else None
        except BaseException as exc:
            errors.append(exc)

    parts = [uploads[i::8] for i in range(8)]
    threads = [threading.Thread(target=worker, args=(p,)) for p in parts]
    # WHEN they all run, racing each other (and the session end)
    for t in threads:
        t.start()
    rig.service.end_session("alice", sid)
    for t in threads:
        t.join()
    # THEN ingest was invoked exactly once for the window
    assert errors == []
    assert len(rig.ingest_calls()) == 1, (rig.ingest_calls(), rig.service.store.get_window(sid, 0))
    assert rig.ingest_calls()[0]["windowIndex"] == 0


def test_late_upload_after_close_retriggers_the_window_instead_of_a_second_ingest(rig: CaptureRig) -> None:
    # GIVEN a window closed by time with one frame
    sid = rig.service.start_session("alice").sessionId
    rig.service.record_upload(frame(sid, 1, 0))
    rig.clock.advance(31)
    rig.service.sweep()
    assert len(rig.ingest_calls()) == 1
    # WHEN another frame of that window lands
    outcome = rig.service.record_upload(frame(sid, 1, 1))
    # THEN the retrigger function is asked to force-redo window 1, and ingest is not invoked again
    assert outcome.status == "retriggered"
    assert rig.retrigger_calls() == [
        {"sessionId": sid, "userId": "alice", "windowIndices": [1], "force": True}
    ]
    assert len(rig.ingest_calls()) == 1


def test_redelivered_event_for_a_late_object_does_not_retrigger_twice(rig: CaptureRig) -> None:
    sid = rig.service.start_session("alice").sessionId
    rig.service.record_upload(frame(sid, 1, 0))
    rig.service.end_session("alice", sid)
    # WHEN the same late object is reported twice, and an object counted before the close is redelivered
    assert rig.service.record_upload(frame(sid, 1, 3)).status == "retriggered"
    assert rig.service.record_upload(frame(sid, 1, 3)).status == "duplicate"
    assert rig.service.record_upload(frame(sid, 1, 0)).status == "duplicate"
    # THEN exactly one retrigger was sent
    assert len(rig.retrigger_calls()) == 1


def test_upload_for_an_unknown_session_is_ignored(rig: CaptureRig) -> None:
    assert rig.service.record_upload(frame("01UNKNOWN", 0, 0)).status == "ignored"
    assert rig.invoker.invocations == []


def test_failed_ingest_invoke_reopens_the_window_for_the_next_close(rig: CaptureRig) -> None:
    # GIVEN the Lambda invoke fails once
    sid = rig.service.start_session("alice").sessionId
    rig.service.record_upload(frame(sid, 0, 0))
    calls: list[dict[str, Any]] = []

    def flaky(payload: dict[str, Any]) -> None:
        calls.append(payload)
        if len(calls) == 1:
            raise RuntimeError("lambda throttled")

    rig.invoker.register(rig.settings.ingest_function_name, flaky)
    rig.clock.advance(31)
    # WHEN the sweeper closes the window and the invoke raises
    with pytest.raises(RuntimeError):
        rig.service.sweep()
    # THEN the window is open again and the next sweep hands it to ingest
    rig.service.sweep()
    assert len(calls) == 2
    state = rig.service.store.get_window(sid, 0)
    assert state is not None and state.closed_at is not None


def test_presigned_put_lands_in_the_bucket_and_its_notification_closes_the_window(rig: CaptureRig) -> None:
    # GIVEN a session and presigned URLs for a whole window
    from worldmm.capture.s3_events import record_notification

    change_settings(rig.service, capture_expected_frames=2)
    sid = rig.service.start_session("alice").sessionId
    frames = rig.service.presign_frames("alice", sid, PresignFramesRequest(windowIndex=0, count=2))
    sound = rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0))
    # WHEN the glasses POST each object and the bucket reports them
    for upload in [*frames.uploads, *sound.uploads]:
        assert post_upload(upload, b"bytes") == 204
    keys = [u.key for u in [*frames.uploads, *sound.uploads]]
    assert rig.s3.list_objects_v2(Bucket=rig.settings.frames_bucket)["KeyCount"] == 3
    outcomes = record_notification(s3_notification(rig.settings.frames_bucket, *keys), rig.service)
    # THEN the third object closes the window and ingest gets both frames
    assert [o.status for o in outcomes] == ["buffered", "buffered", "closed"]
    assert rig.ingest_calls() == [{"sessionId": sid, "userId": "alice", "windowIndex": 0, "frameCount": 2}]
    first = json.loads(json.dumps(frames.model_dump(mode="json")))["uploads"][0]["key"]
    assert first.startswith(frame_key(sid, 0, 0).removesuffix(".jpg") + ".") and first.endswith(".jpg")


def test_racing_closers_invoke_ingest_once_for_the_window(rig: CaptureRig) -> None:
    # GIVEN a complete window that two callers (the count-close and the session end) both try to close
    sid = rig.service.start_session("alice").sessionId
    rig.service.record_upload(frame(sid, 0, 0))
    # WHEN both close it
    first = rig.service.close_window(sid, 0, CloseReason.COMPLETE)
    second = rig.service.close_window(sid, 0, CloseReason.SESSION_END)
    # THEN only the first conditional write wins and ingest is invoked once
    assert first is not None and second is None
    assert len(rig.ingest_calls()) == 1
