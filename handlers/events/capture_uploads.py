"""CaptureUploadsFunction: an SQS batch of bucket ObjectCreated notifications recorded as window uploads.

Failures are reported per record (Powertools batch), so SQS redelivers only what failed; recording is
idempotent, so a redelivery changes nothing twice.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from worldmm.capture.s3_events import record_notification
from worldmm.forget_user import sweep_unclaimed_uploads
from worldmm.observability import instrument
from worldmm.services import get_services

logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)
processor = BatchProcessor(event_type=EventType.SQS)


def _record_handler(record: SQSRecord) -> None:
    services = get_services()
    outcomes = record_notification(json.loads(record.body), services.capture)
    for outcome in outcomes:
        logger.info("upload_recorded", extra=outcome.model_dump(exclude_none=True))
    # An upload to a session no catalog knows (its user was forgotten meanwhile) is erased, not kept.
    sweep_unclaimed_uploads(services, {o.sessionId for o in outcomes if o.status == "ignored" and o.sessionId})


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS batch of S3 notifications → recorded uploads; partial batch failures reported."""
    response = process_partial_response(
        event=event, record_handler=_record_handler, processor=processor, context=context
    )
    return dict(response)
