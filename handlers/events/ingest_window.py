"""IngestWindowFunction (async invoke) and IngestDLQConsumer (SQS, ReportBatchItemFailures): thin doors."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from worldmm.ingest.dlq import handle_dlq_record, window_event_from_body
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.steplog import log_step
from worldmm.ingest.window import ingest_window
from worldmm.observability import count, instrument
from worldmm.services import get_services

logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)
# BatchSize is 1: a failed item must come back as a batchItemFailure, not as a function error.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


@logger.inject_lambda_context
@instrument
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Ingest one window. GpuUnavailableError and step failures propagate: OnFailure routes to the DLQ.

    An event that can never succeed (malformed, or a session that is not the event's user's) is logged
    with the `event_rejected` step and answered `skipped`, so it is not retried.
    """
    try:
        parsed = IngestWindowEvent.model_validate(event)
    except ValidationError as exc:  # retrying a malformed event can never succeed: logged, not raised
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors(include_url=False)})
        log_step(logger, "event_rejected", level="warning", reason="invalid_event", fields=fields)
        count("WindowsSkipped")
        return {"status": "skipped", "reason": "invalid_event"}
    try:
        result = ingest_window(get_services().for_user(parsed.userId), parsed)
    except Exception:
        count("WindowsFailed")  # the event goes to IngestDLQ (OnFailure)
        raise
    count("WindowsIngested" if result.status == "ok" else "WindowsSkipped")
    return result.model_dump()


def _record_handler(record: SQSRecord) -> dict[str, Any]:
    """One DLQ message on its user's database cell (resolved once, as every invocation does); a message with no
    readable event is rejected by `handle_dlq_record` before any database is reached."""
    services = get_services()
    try:
        user_id = window_event_from_body(record.body).userId
    except (ValueError, ValidationError):
        return handle_dlq_record(services, record)
    return handle_dlq_record(services.for_user(user_id), record)


@logger.inject_lambda_context
@instrument
def sqs_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Retry DLQ'd windows; a failed item stays on the queue (visibility extended while the GPU is down)."""
    response = process_partial_response(
        event=event, record_handler=_record_handler, processor=processor, context=context
    )
    return dict(response)
