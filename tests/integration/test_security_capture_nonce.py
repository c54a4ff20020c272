"""One object per upload URL (issue 64, Build 3): each presigned POST names a key of its own (a nonce in the
policy's key), so asking again for a frame's URL never targets the object another URL wrote; the upload is
still recorded as its window's frame or audio, and ingest finds a window's audio by its nonce'd name.
Before this change every URL of a frame named the same key."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.capture import CaptureRig, make_rig, post_upload, s3_notification
from tests.support.harness import make_settings
from worldmm.capture.models import PresignAudioRequest, PresignFramesRequest
from worldmm.capture.s3_events import parse_key, record_notification
from worldmm.media.frames import find_window_audio, list_frame_keys
from worldmm.media.objects import S3ObjectStore

pytestmark = pytest.mark.integration


@pytest.fixture
def rig(aws: None) -> Iterator[CaptureRig]:
    yield make_rig(make_settings(capture_expected_frames=1, capture_close_after_s=30))


def test_security_each_upload_url_names_its_own_object_fails_on_todays_code(rig: CaptureRig) -> None:
    # GIVEN Alice's session, and the URL of frame 0 of window 0 asked for twice, and the audio's twice
    sid = rig.service.start_session("alice").sessionId
    frames = [rig.service.presign_frames("alice", sid, PresignFramesRequest(windowIndex=0, count=1)) for _ in "ab"]
    audio = [rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0)) for _ in "ab"]
    keys = [r.uploads[0].key for r in (*frames, *audio)]
    # THEN no two URLs name the same key, and the policy signs exactly that key
    assert len(set(keys)) == 4
    for result in (*frames, *audio):
        [upload] = result.uploads
        assert upload.fields["key"] == upload.key
    # AND each key is still read as its window's frame 0 or its audio
    parsed = [parse_key(k) for k in keys]
    assert [(p.window_index, p.kind.value, p.frame_index) for p in parsed if p] == [
        (0, "frame", 0), (0, "frame", 0), (0, "audio", None), (0, "audio", None),
    ]


def test_nonce_keyed_uploads_close_the_window_and_ingest_reads_the_newest_audio(rig: CaptureRig) -> None:
    # GIVEN a window whose frame and audio arrive under their URLs' keys (the audio asked for twice)
    sid = rig.service.start_session("alice").sessionId
    [frame] = rig.service.presign_frames("alice", sid, PresignFramesRequest(windowIndex=0, count=1)).uploads
    older = rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0)).uploads[0]
    newer = rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0)).uploads[0]
    for upload, body in ((frame, b"\xff\xd8"), (older, b"RIFF-old"), (newer, b"RIFF-new")):
        assert post_upload(upload, body) == 204
    # WHEN the bucket's notifications are recorded
    outcomes = record_notification(s3_notification(rig.settings.frames_bucket, frame.key, newer.key), rig.service)
    # THEN the window closes once, and ingest finds its frame and the newest audio chunk
    assert [o.status for o in outcomes] == ["buffered", "closed"]
    assert len(rig.ingest_calls()) == 1
    store = S3ObjectStore(rig.settings.frames_bucket, rig.s3)
    assert list_frame_keys(store, sid, 0) == [frame.key]
    audio = find_window_audio(store, sid, 0)
    assert audio is not None and audio.data == b"RIFF-new" and not audio.full_session
