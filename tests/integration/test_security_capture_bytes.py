"""Capture is bound by bytes, not only by count (issue 64, Medium 3; Build 3).

Before this change asking again for the upload URLs of a window already counted was free, and ended or
day-old sessions still got URLs: a loop of presign + POST to window 0 stored without bound. Now every URL
counts the most bytes it takes against the user's day (a re-presign included; 429 past the budget), a
session ended longer ago than the grace for buffered uploads, or older than a day of windows, gets 409, and
the bucket drops noncurrent versions (an overwritten body) after a day.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.capture import CaptureRig, make_rig, post_upload
from tests.support.harness import make_settings
from tests.support.template import load_template
from worldmm.capture.models import PresignAudioRequest, PresignFramesRequest
from worldmm.errors import Conflict, QuotaExceeded

pytestmark = pytest.mark.integration

FRAME_BYTES = 1024
AUDIO_BYTES = 4096
BUDGET = 6 * FRAME_BYTES + AUDIO_BYTES  # six frame URLs and one audio URL a day (or ten frame URLs)


@pytest.fixture
def rig(aws: None) -> Iterator[CaptureRig]:
    yield make_rig(
        make_settings(
            capture_expected_frames=4,
            capture_max_frame_bytes=FRAME_BYTES,
            capture_max_audio_bytes=AUDIO_BYTES,
            capture_max_bytes_per_day=BUDGET,
            capture_presign_after_end_s=120,
        )
    )


def test_security_a_represign_of_a_counted_window_is_counted_fails_on_todays_code(rig: CaptureRig) -> None:
    # GIVEN Alice's session
    sid = rig.service.start_session("alice").sessionId
    frames = PresignFramesRequest(windowIndex=0, count=2)
    # WHEN she asks again and again for the same two frames of window 0, and for its audio
    for _ in range(3):
        rig.service.presign_frames("alice", sid, frames)
    rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0))
    # THEN the day's bytes are taken: the next ask of either kind is refused until tomorrow
    with pytest.raises(QuotaExceeded) as refused:
        rig.service.presign_frames("alice", sid, frames)
    assert "bytes of uploads a day" in str(refused.value) and refused.value.retry_after_s > 0
    with pytest.raises(QuotaExceeded):
        rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0))
    # AND Bob's budget is his own
    bob = rig.service.start_session("bob").sessionId
    rig.service.presign_frames("bob", bob, frames)


def test_security_a_presign_and_post_loop_on_one_window_stops_at_the_byte_budget_fails_on_todays_code(
    rig: CaptureRig,
) -> None:
    # GIVEN Alice looping presign + POST of a full frame to window 0, frame 0
    sid = rig.service.start_session("alice").sessionId
    stored = 0
    for _ in range(50):
        try:
            [upload] = rig.service.presign_frames("alice", sid, PresignFramesRequest(windowIndex=0, count=1)).uploads
        except QuotaExceeded:
            break
        assert post_upload(upload, b"\xff" * FRAME_BYTES) in (200, 204)
        stored += FRAME_BYTES
    # THEN what the URLs let her store stops at the budget
    assert stored == BUDGET


def _ended(rig: CaptureRig, user: str) -> str:
    sid = rig.service.start_session(user).sessionId
    rig.service.end_session(user, sid)
    return sid


def test_security_an_ended_session_gets_no_upload_urls_after_the_grace_fails_on_todays_code(
    rig: CaptureRig,
) -> None:
    # GIVEN Alice's session, ended
    sid = _ended(rig, "alice")
    # THEN uploads buffered on the glasses still get URLs for two minutes
    rig.clock.advance(60)
    rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=0))
    # AND later every ask is 409
    rig.clock.advance(61)
    for ask in (
        lambda: rig.service.presign_frames("alice", sid, PresignFramesRequest(windowIndex=1, count=1)),
        lambda: rig.service.presign_audio("alice", sid, PresignAudioRequest(windowIndex=1)),
    ):
        with pytest.raises(Conflict):
            ask()


def test_security_a_session_older_than_a_day_of_windows_gets_no_upload_urls_fails_on_todays_code(
    rig: CaptureRig,
) -> None:
    # GIVEN Alice's session, never ended, a day and more old
    sid = rig.service.start_session("alice").sessionId
    rig.clock.advance((rig.settings.capture_max_window_index + 1) * rig.settings.window_seconds + 121)
    # THEN it gets no URL
    with pytest.raises(Conflict):
        rig.service.presign_frames("alice", sid, PresignFramesRequest(windowIndex=0, count=1))


def test_security_noncurrent_versions_of_raw_uploads_expire_within_a_day_fails_on_todays_code() -> None:
    rules: list[dict[str, Any]] = load_template()["Resources"]["FramesBucket"]["Properties"]["LifecycleConfiguration"][
        "Rules"
    ]
    for rule in rules:
        if "NoncurrentVersionExpiration" in rule:
            assert rule["NoncurrentVersionExpiration"]["NoncurrentDays"] <= 1, rule["Id"]
    assert any(r.get("Prefix") == "sessions/" and "NoncurrentVersionExpiration" in r for r in rules)
