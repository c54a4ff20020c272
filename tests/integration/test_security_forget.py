"""Issue 27 item 5: a forget-me that fails half-way is finished by running it again.

S3 fails (a botocore hook on the real client refuses DeleteObjects, as an outage would) during the first
erase of a user who also has a session that was never ingested (uploads only: no segment points at it).
The catalog still names that session afterwards, so the second run finds it and erases every store.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration import test_forget_me
from tests.integration.test_forget_me import FORGOTTEN, OTHERS, World, mentions, snapshot, without
from worldmm.capture.models import CaptureSession
from worldmm.capture.store import CaptureStore
from worldmm.forget import forget_user

pytestmark = pytest.mark.integration

NEVER_INGESTED = "Snever-ingested-session-1"
world = test_forget_me.world  # the three users of issue 14's forget-me tests, in every store


class S3Outage(Exception):
    """What the hook raises in place of DeleteObjects."""


def test_security_a_forget_that_fails_in_s3_is_finished_by_a_second_run(world: World) -> None:
    settings = world.services.settings
    # GIVEN the user also has a session whose frames were uploaded but never ingested
    capture = CaptureStore(settings.sessions_table, settings.capture_windows_table, client=world.dynamodb)
    capture.create_session(
        CaptureSession(session_id=NEVER_INGESTED, user_id=FORGOTTEN, created_at="2026-05-01T11:00:00Z")
    )
    for f in range(3):
        world.s3.put_object(
            Bucket=settings.frames_bucket, Key=f"sessions/{NEVER_INGESTED}/window_0/frame_{f:04d}.jpg", Body=b"\xff\xd8"
        )
    before = snapshot(world)

    def everyone_elses(snap: dict[str, Any]) -> dict[str, Any]:
        return without(without(snap, FORGOTTEN, world.sessions[FORGOTTEN]), FORGOTTEN, NEVER_INGESTED)


    def outage(**kwargs: Any) -> None:
        raise S3Outage("S3 unavailable")

    # WHEN the first erase meets an S3 outage
    world.s3.meta.events.register("before-call.s3.DeleteObjects", outage)
    with pytest.raises(S3Outage):
        forget_user(world.services, FORGOTTEN, requested_by="test")
    world.s3.meta.events.unregister("before-call.s3.DeleteObjects", outage)
    # AND is run again once S3 is back
    report = forget_user(world.services, FORGOTTEN, requested_by="test")
    # THEN nothing of the user is left in any store (the never-ingested session's frames included)
    after = snapshot(world)
    assert report.complete
    left = mentions(after, FORGOTTEN, world.sessions[FORGOTTEN]) + mentions(after, FORGOTTEN, NEVER_INGESTED)
    assert left == []
    assert not [v for v in after["s3"] if v.startswith(f"sessions/{NEVER_INGESTED}/")]
    # AND nothing of anyone else changed
    assert everyone_elses(after) == everyone_elses(before)
    assert all(mentions(after, user, world.sessions[user]) for user in OTHERS)
