"""IngestDLQConsumer's per-message policy: wait out GPU outages, otherwise retry the window.

No receive-count cap (spec 000, PR #409): a poison pill ages out with the queue's 14-day retention.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from pydantic import ValidationError

from worldmm.errors import GpuUnavailableError, WorldMMError
from worldmm.ingest.catalog.port import owned_session
from worldmm.ingest.events import EventRejected, IngestWindowEvent, IngestWindowSkipped, IngestWindowSuccess
from worldmm.ingest.steplog import log_step
from worldmm.ingest.window import find_window_segment, ingest_window

if TYPE_CHECKING:
    from worldmm.ingest.window import WindowPorts

logger = Logger(child=True)


class WindowBusyError(WorldMMError):
    """The window is claimed by another invocation; the message is retried after its visibility timeout."""

    status_code = 409


def window_event_from_body(body: str) -> IngestWindowEvent:
    """The IngestWindowEvent in a DLQ message: an OnFailure record (`requestPayload`) or the bare event."""
    value: Any = json.loads(body)
    if isinstance(value, dict) and isinstance(value.get("requestPayload"), dict):
        value = value["requestPayload"]
    return IngestWindowEvent.model_validate(value)


def extend_visibility(services: WindowPorts, record: SQSRecord, reason: str, seconds: int | None = None) -> None:
    """Hide the message for DLQ_VISIBILITY_EXTENSION_S (or `seconds`) so a GPU outage does not spin the consumer."""
    from worldmm.aws import aws_client

    seconds = services.ingest_settings.dlq_visibility_extension_s if seconds is None else seconds
    queue_url = services.ingest_settings.ingest_dlq_url
    if not queue_url:
        raise RuntimeError("INGEST_DLQ_URL is not set")
    aws_client("sqs").change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=record.receipt_handle, VisibilityTimeout=seconds
    )
    log_step(
        logger,
        "dlq_visibility_extended",
        message_id=record.message_id,
        extended_seconds=seconds,
        reason=reason,
    )


def defer_for_gpu(services: WindowPorts, record: SQSRecord) -> None:
    """Hide the message while the GPU is down, tell the controller (which makes it visible again once the
    GPU is ready) and wake it. The registry is written before the GPU is looked at again: a controller that
    got ready in between either sees the record or is seen here, so no message waits out the 900 s."""
    extend_visibility(services, record, reason="gpu_unavailable")
    services.gpu_demand.defer(record.message_id, record.receipt_handle)
    services.gpu_demand.wake("dlq")
    if services.gpu_url() is not None:
        extend_visibility(services, record, reason="gpu_ready", seconds=0)


def handle_dlq_record(services: WindowPorts, record: SQSRecord) -> dict[str, Any]:
    """Process one DLQ message; raising marks it failed (it returns to the queue).

    A message that can never succeed (not JSON, not a valid window event, a session that is not the
    event's user's) is logged with the `event_rejected` step and consumed, not retried for 14 days.
    """
    event = _event_in(record)
    if event is None:
        return IngestWindowSkipped(reason="invalid_event").model_dump()
    existing = find_window_segment(services, event.userId, event.sessionId, event.windowIndex)
    log_step(
        logger,
        "dlq_received",
        message_id=record.message_id,
        receive_count=int(record.attributes.approximate_receive_count or 0),
        segment_id=str(existing[0]) if existing else None,
    )
    try:
        owned_session(services, event.sessionId, event.userId)  # before waiting on a GPU for it
    except EventRejected as rejected:
        log_step(
            logger,
            "event_rejected",
            level="warning",
            reason=rejected.reason,
            message_id=record.message_id,
            session_id=event.sessionId,
            window_index=event.windowIndex,
        )
        return IngestWindowSkipped(reason=rejected.reason).model_dump()
    if services.ingest_settings.gpu_required and services.gpu_url() is None:
        defer_for_gpu(services, record)
        raise GpuUnavailableError("GPU worker unavailable; message deferred")
    result = _retry_window(services, record, event)
    if isinstance(result, IngestWindowSkipped) and result.reason == "in_progress":
        # Another invocation holds the window (or crashed holding it): keep the message until it is done.
        raise WindowBusyError(f"window {event.windowIndex} of {event.sessionId} is being processed")
    services.gpu_demand.settle(record.message_id)
    return result.model_dump()


def _event_in(record: SQSRecord) -> IngestWindowEvent | None:
    """The message's window event, or None (logged `event_rejected`) when it is not JSON or not a valid event."""
    try:
        return window_event_from_body(record.body)
    except (ValueError, ValidationError) as exc:  # json.JSONDecodeError is a ValueError
        log_step(
            logger,
            "event_rejected",
            level="warning",
            reason="invalid_event",
            message_id=record.message_id,
            error_type=type(exc).__name__,
        )
        return None


def _retry_window(services: WindowPorts, record: SQSRecord, event: IngestWindowEvent) -> IngestWindowSuccess:
    """Run the window again; a GPU outage defers the message, any other failure is logged; both propagate."""
    try:
        return ingest_window(services, event)
    except GpuUnavailableError:  # it went away between the check and the window's own gate
        defer_for_gpu(services, record)
        raise
    except Exception as exc:  # not the GPU: the message returns to the queue after its visibility timeout
        log_step(
            logger,
            "dlq_retry_failed",
            level="error",
            message_id=record.message_id,
            session_id=event.sessionId,
            window_index=event.windowIndex,
            error_type=type(exc).__name__,
            error=str(exc)[:500],
        )
        raise
