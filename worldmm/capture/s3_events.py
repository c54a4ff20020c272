"""Bucket ObjectCreated notifications (S3 → SQS → this function) recorded as window uploads.

Each SQS record carries one S3 event notification; every object under
`sessions/{sessionId}/window_{n}/` (`frame_NNNN.jpg` or `audio.wav`) is recorded with
`CaptureService.record_upload`. Failures are reported per record (Powertools batch), so SQS
redelivers only what failed; recording is idempotent, so a redelivery changes nothing twice.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from worldmm.capture.models import UploadedObject, UploadKind, UploadOutcome
from worldmm.observability import instrument

if TYPE_CHECKING:
    from worldmm.capture.service import CaptureService

logger = Logger(service="worldmm-capture-uploads")
processor = BatchProcessor(event_type=EventType.SQS)

_KEY = re.compile(
    r"^sessions/(?P<session>[A-Za-z0-9_-]{1,64})/window_(?P<window>\d{1,9})/"
    r"(?:frame_(?P<frame>\d{1,6})\.jpe?g|(?P<audio>audio\.wav))$"
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


def record_notification(
    notification: dict[str, Any], service: CaptureService | None = None
) -> list[UploadOutcome]:
    """Record every upload of one notification (with the process's capture service unless given)."""
    if service is None:
        from worldmm.capture.service import capture_service

        service = capture_service()
    return [service.record_upload(upload) for upload in uploads_in_notification(notification)]


def _record_handler(record: SQSRecord) -> None:
    outcomes = record_notification(json.loads(record.body))
    for outcome in outcomes:
        logger.info("upload_recorded", extra=outcome.model_dump(exclude_none=True))


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batch of S3 notifications → recorded uploads; partial batch failures reported."""
    response = process_partial_response(
        event=event, record_handler=_record_handler, processor=processor, context=context
    )
    return dict(response)
