"""A forget-me that fails half-way is finished by running it again.

S3 fails (a botocore hook on the real client refuses DeleteObjects, as an outage would) during the first
erase of a user who also has a session that was never ingested (uploads only: no segment points at it).
The catalog still names that session afterwards, so the second run finds it and erases every store.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration import test_forget_me
from tests.integration.test_forget_me import FORGOTTEN, OTHERS, World, mentions, snapshot, without
from worldmm.capture.dynamo import CaptureStore
from worldmm.capture.models import CaptureSession
from worldmm.chat.dynamo import dynamo_table_definitions
from worldmm.chat.settings import ChatSettings
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.forget_user import forget_user

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


def test_security_an_upload_landing_after_the_erase_is_swept(settings: Settings, db: Database, aws: None) -> None:
    # GIVEN the capture functions on moto (versioned bucket), Alice's session and Bob's
    from handlers.events import capture_uploads
    from handlers.http.capture.start import app as start_app
    from tests.support.capture import create_capture_resources, http_event, lambda_context, s3_notification
    from worldmm.config import Profile
    from worldmm.ingest.invoker.local import InProcessInvoker
    from worldmm.services import Services, set_services

    settings = settings.model_copy(update={"worldmm_profile": Profile.AWS, "capture_expected_frames": 2})
    s3, dynamodb = create_capture_resources(settings)
    for definition in dynamo_table_definitions(ChatSettings.of(settings)):
        dynamodb.create_table(**definition)
    s3.put_bucket_versioning(Bucket=settings.frames_bucket, VersioningConfiguration={"Status": "Enabled"})
    set_services(Services(settings, db=db, invoker=InProcessInvoker()))
    try:
        sessions = {}
        for user in ("alice", "bob"):
            response = start_app.lambda_handler(http_event("POST", "/sessions", sub=user), lambda_context())
            sessions[user] = json.loads(response["body"])["sessionId"]
        # WHEN Alice is forgotten, and then an upload she was granted before lands (twice: two versions)
        from worldmm.services import get_services

        forget_user(get_services(), "alice", requested_by="test")
        late = f"sessions/{sessions['alice']}/window_0/frame_0000.jpg"
        kept = f"sessions/{sessions['bob']}/window_0/frame_0000.jpg"
        for key in (late, late, kept):
            s3.put_object(Bucket=settings.frames_bucket, Key=key, Body=b"\xff\xd8")
        body = json.dumps(s3_notification(settings.frames_bucket, late, kept))
        record = {
            "messageId": "m0",
            "receiptHandle": "r",
            "body": body,
            "attributes": {},
            "messageAttributes": {},
            "md5OfBody": "",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:1:q",
            "awsRegion": "us-east-1",
        }
        response = capture_uploads.lambda_handler({"Records": [record]}, lambda_context())
    finally:
        set_services(None)
    # THEN every version of the late upload is gone; Bob's upload is recorded and kept
    assert response == {"batchItemFailures": []}
    versions = s3.list_object_versions(Bucket=settings.frames_bucket, Prefix="sessions/")
    left = [v["Key"] for v in [*versions.get("Versions", []), *versions.get("DeleteMarkers", [])]]
    assert late not in left and kept in left
