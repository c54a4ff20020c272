"""Bucket ObjectCreated notifications recorded as window uploads (S3 → SQS → `handlers.events.capture_uploads`).

Each SQS record carries one S3 event notification; every object under
`sessions/{sessionId}/window_{n}/` (`frame_NNNN[.nonce].jpg` or `audio[.nonce].wav`) is recorded with
`CaptureService.record_upload`; recording is idempotent, so a redelivery changes nothing twice.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger

from worldmm.capture.models import UploadedObject, UploadKind, UploadOutcome

if TYPE_CHECKING:
    from worldmm.capture.service import CaptureService

logger = Logger(child=True)

_KEY = re.compile(
    r"^sessions/(?P<session>[A-Za-z0-9_-]{1,64})/window_(?P<window>\d{1,9})/"
    r"(?:frame_(?P<frame>\d{1,6})(?:\.[0-9a-z]{26})?\.jpe?g|(?P<audio>audio(?:\.[0-9a-z]{26})?\.wav))$"
)


def parse_key(key: str) -> UploadedObject | None:
    """The window upload a bucket key names, or None for keys outside the capture layout."""
    match = _KEY.match(key)
    if match is None:
        return None
    return UploadedObject(
        session_id=match["session"],
        window_index=int(match["window"]),
        kind=UploadKind.AUDIO if match["audio"] else UploadKind.FRAME,
        frame_index=int(match["frame"]) if match["frame"] is not None else None,
    )


def uploads_in_notification(notification: dict[str, Any]) -> list[UploadedObject]:
    """Window uploads in one S3 event notification (test events and foreign keys yield nothing)."""
    found: list[UploadedObject] = []
    for record in notification.get("Records") or []:
        if not str(record.get("eventName", "")).startswith("ObjectCreated:"):
            continue
        key = unquote_plus(str(((record.get("s3") or {}).get("object") or {}).get("key", "")))
        upload = parse_key(key)
        if upload is None:
            logger.warning("upload_key_ignored", extra={"key": key})
            continue
        found.append(upload)
    return found


def record_notification(notification: dict[str, Any], service: CaptureService) -> list[UploadOutcome]:
    """Record every upload of one notification."""
    return [service.record_upload(upload) for upload in uploads_in_notification(notification)]
