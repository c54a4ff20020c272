"""The capture side of the pipeline: sessions, presigned uploads, and closing 30-second windows.

Flow: `POST /sessions` writes the sessions row (`createdAt`). The glasses ask for presigned POSTs (bounded
length and content type, each for a key of its own: `frame_NNNN.{nonce}.jpg`, `audio.{nonce}.wav`) under
`sessions/{sessionId}/window_{n}/` and upload straight to S3. Uploads are
*recorded from the bucket's ObjectCreated notifications* (S3 → SQS → `worldmm.capture.s3_events`), not from
a client's "uploaded" call: the bucket only reports objects that really exist, a client crash after the upload loses
nothing, and SQS redelivers on failure. A window closes when its expected frames and the audio chunk
are in, when `capture_close_after_s` passed since its first upload (the scheduled sweeper), or when the
session ends. Closing is one DynamoDB conditional write, so IngestWindowFunction is invoked exactly
once per window; an upload that lands after the close asks RetriggerIngestFunction to redo that window.
Upload URLs are given for `capture_presign_after_end_s` after a session ended (uploads buffered on the glasses
still arrive; windows they open close by time, and objects for closed windows retrigger them), never later
and never for a session older than a day of windows (409). Each URL counts the most bytes it takes against
the user's bytes of the day (`capture_bytes_per_day`), a URL asked for again included (429 past it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from worldmm.capture.models import (
    AUDIO_CONTENT_TYPES,
    FRAME_CONTENT_TYPES,
    CaptureSession,
    ClosedWindow,
    CloseReason,
    EndSessionResult,
    PresignAudioRequest,
    PresignedUpload,
    PresignFramesRequest,
    PresignResult,
    StartSessionResult,
    SweepResult,
    UploadedObject,
    UploadKind,
    UploadOutcome,
    WindowState,
)
from worldmm.capture.port import CaptureStatePort
from worldmm.capture.settings import CaptureSettings
from worldmm.crashpoints import crash_point
from worldmm.errors import BadRequest, Conflict, Forbidden, QuotaExceeded
from worldmm.media.frames import window_audio_key, window_prefix

if TYPE_CHECKING:
    from worldmm.ingest.invoker.port import FunctionInvoker

logger = Logger(child=True)


def frame_key(session_id: str, window_index: int, frame_index: int, nonce: str | None = None) -> str:
    """`sessions/{sessionId}/window_{n}/frame_{i:04d}[.{nonce}].jpg` (zero-padded so keys sort in capture order)."""
    return f"{window_prefix(session_id, window_index)}frame_{frame_index:04d}{_dot(nonce)}.jpg"


def audio_key(session_id: str, window_index: int, nonce: str | None = None) -> str:
    """`sessions/{sessionId}/window_{n}/audio[.{nonce}].wav`."""
    if nonce is None:
        return window_audio_key(session_id, window_index)
    return f"{window_prefix(session_id, window_index)}audio.{nonce}.wav"


def upload_nonce() -> str:
    """A fresh key suffix for one upload URL (26 hex digits: the microsecond it was made, then 48 random bits; the
    newest sorts last), so every URL names an object of its own and no two URLs write the same key (issue 64)."""
    import secrets

    return f"{time.time_ns() // 1000:014x}{secrets.token_hex(6)}"


def _dot(nonce: str | None) -> str:
    return f".{nonce}" if nonce else ""


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def _day_and_rest(ts: float) -> tuple[str, int]:
    """The UTC day of `ts` (YYYY-MM-DD) and the seconds left in it (a quota's Retry-After)."""
    moment = datetime.fromtimestamp(ts, UTC)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return moment.strftime("%Y-%m-%d"), int(86_400 - (moment - midnight).total_seconds()) + 1


class CaptureService:
    """Sessions, presigned uploads and exactly-once window close → ingest invoke."""

    def __init__(
        self,
        settings: CaptureSettings,
        store: CaptureStatePort,
        s3_client: Any,
        invoker: FunctionInvoker,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.s3 = s3_client
        self.invoker = invoker
        self.clock = clock

    # --- sessions -------------------------------------------------------------
    def start_session(self, user_id: str) -> StartSessionResult:
        """Create a capture session owned by `user_id`; its `createdAt` anchors window timestamps."""
        from ulid import ULID

        day, rest = _day_and_rest(self.clock())
        limit = self.settings.capture_max_sessions_per_day
        if not self.store.reserve_session(user_id, day, limit):
            raise QuotaExceeded(
                f"at most {limit} capture sessions a day: this account has started them all today (UTC); "
                "continue in an open session or start one tomorrow",
                retry_after_s=rest,
            )
        session = CaptureSession(session_id=str(ULID()), user_id=user_id, created_at=_iso(self.clock()))
        self.store.create_session(session)
        logger.info("session_started", extra={"session_id": session.session_id})
        return StartSessionResult(
            sessionId=session.session_id,
            createdAt=session.created_at,
            windowSeconds=self.settings.window_seconds,
            expectedFrames=self.settings.capture_expected_frames,
        )

    def owned_session(self, user_id: str, session_id: str) -> CaptureSession:
        """The session if `user_id` owns it; Forbidden otherwise (also when it does not exist)."""
        session = self.store.get_session(session_id) if _valid_session_id(session_id) else None
        if session is None or session.user_id != user_id:
            raise Forbidden("session not found")
        return session

    def end_session(self, user_id: str, session_id: str) -> EndSessionResult:
        """Mark the session ended and close every window still buffering (each ingested once)."""
        self.owned_session(user_id, session_id)
        ended_at = self.store.mark_session_ended(session_id, _iso(self.clock()))
        crash_point("capture.session_ended")
        closed = [
            window.windowIndex
            for index in self.store.open_window_indices(session_id)
            if (window := self.close_window(session_id, index, CloseReason.SESSION_END)) is not None
        ]
        logger.info("session_ended", extra={"session_id": session_id, "closed_windows": closed})
        return EndSessionResult(sessionId=session_id, endedAt=ended_at, closedWindows=closed)

    # --- presigned uploads ----------------------------------------------------
    def _check_window(self, user_id: str, session_id: str, window_index: int) -> None:
        """The index is in bounds, and the window is counted against the user's windows of the day (once)."""
        if window_index > self.settings.capture_max_window_index:
            raise BadRequest(f"windowIndex must be at most {self.settings.capture_max_window_index}")
        day, rest = _day_and_rest(self.clock())
        limit = self.settings.capture_max_windows_per_day
        if not self.store.reserve_window(user_id, session_id, window_index, day, limit):
            raise QuotaExceeded(
                f"at most {limit} capture windows a day: this account has asked upload URLs for them all "
                "today (UTC); windows already begun still take their uploads",
                retry_after_s=rest,
            )

    def _open_for_uploads(self, session: CaptureSession) -> None:
        """Conflict once the session ended longer ago than the grace for buffered uploads, or is older than a
        day of windows (no window index of it would be valid)."""
        now = self.clock()
        if session.ended_at is not None:
            ended = datetime.fromisoformat(session.ended_at).timestamp()
            if now - ended > self.settings.capture_presign_after_end_s:
                raise Conflict("the session has ended: start a new session for new uploads")
        created = datetime.fromisoformat(session.created_at).timestamp()
        max_age = (self.settings.capture_max_window_index + 1) * self.settings.window_seconds
        if now - created > max_age + self.settings.capture_presign_after_end_s:
            raise Conflict("the session is older than a day of windows: start a new session for new uploads")

    def _reserve_bytes(self, user_id: str, amount: int) -> None:
        """Count `amount` bytes of upload URLs against the user's day; QuotaExceeded past the day's budget."""
        day, rest = _day_and_rest(self.clock())
        budget = self.settings.capture_bytes_per_day
        if not self.store.reserve_bytes(user_id, day, amount, budget):
            raise QuotaExceeded(
                f"at most {budget} bytes of uploads a day: this account's upload URLs of today (UTC) take them "
                "all (each URL counts the most it takes, also when asked for again)",
                retry_after_s=rest,
            )

    def _presign(self, kind: UploadKind, key: str, content_type: str, index: int | None = None) -> PresignedUpload:
        """A presigned POST for `key`: the bucket takes only this content type and 1..max bytes (a presigned
        PUT signs no length, so it would take up to 5 GB)."""
        max_bytes = (
            self.settings.capture_max_frame_bytes if kind is UploadKind.FRAME else self.settings.capture_max_audio_bytes
        )
        post = self.s3.generate_presigned_post(
            Bucket=self.settings.frames_bucket,
            Key=key,
            Fields={"Content-Type": content_type},
            Conditions=[{"Content-Type": content_type}, ["content-length-range", 1, max_bytes]],
            ExpiresIn=self.settings.capture_url_expiry_s,
        )
        fields = {str(name): str(value) for name, value in post["fields"].items()}
        return PresignedUpload(kind=kind, index=index, key=key, url=str(post["url"]), fields=fields, maxBytes=max_bytes)

    def presign_frames(self, user_id: str, session_id: str, request: PresignFramesRequest) -> PresignResult:
        """Upload POSTs for frames `start .. start+count-1` of one window of an owned session."""
        self._open_for_uploads(self.owned_session(user_id, session_id))
        if request.contentType not in FRAME_CONTENT_TYPES:
            raise BadRequest(f"contentType must be one of {', '.join(FRAME_CONTENT_TYPES)}")
        expected = self.settings.capture_expected_frames
        if request.start + request.count > expected:
            raise BadRequest(f"a window holds at most {expected} frames (indices 0..{expected - 1})")
        self._check_window(user_id, session_id, request.windowIndex)
        self._reserve_bytes(user_id, request.count * self.settings.capture_max_frame_bytes)
        uploads = [
            self._presign(
                UploadKind.FRAME, frame_key(session_id, request.windowIndex, i, upload_nonce()), request.contentType, i
            )
            for i in range(request.start, request.start + request.count)
        ]
        return PresignResult(
            sessionId=session_id,
            windowIndex=request.windowIndex,
            expiresIn=self.settings.capture_url_expiry_s,
            uploads=uploads,
        )

    def presign_audio(self, user_id: str, session_id: str, request: PresignAudioRequest) -> PresignResult:
        """The upload POST of one window's audio chunk (`audio.wav`) of an owned session."""
        self._open_for_uploads(self.owned_session(user_id, session_id))
        if request.contentType not in AUDIO_CONTENT_TYPES:
            raise BadRequest(f"contentType must be one of {', '.join(AUDIO_CONTENT_TYPES)}")
        self._check_window(user_id, session_id, request.windowIndex)
        self._reserve_bytes(user_id, self.settings.capture_max_audio_bytes)
        key = audio_key(session_id, request.windowIndex, upload_nonce())
        upload = self._presign(UploadKind.AUDIO, key, request.contentType)
        return PresignResult(
            sessionId=session_id,
            windowIndex=request.windowIndex,
            expiresIn=self.settings.capture_url_expiry_s,
            uploads=[upload],
        )

    # --- uploads and closing --------------------------------------------------
    def _is_complete(self, window: WindowState) -> bool:
        return window.has_audio and window.frame_count >= self.settings.capture_expected_frames

    def record_upload(self, upload: UploadedObject) -> UploadOutcome:
        """Record an object that landed; close the window when complete; retrigger a late one."""
        session = self.store.get_session(upload.session_id)
        if session is None:
            # Only presigned keys of known sessions can be written; anything else is not ours to ingest.
            logger.warning("upload_unknown_session", extra={"session_id": upload.session_id})
            return _outcome("ignored", upload)
        expected = self.settings.capture_expected_frames
        if upload.kind is UploadKind.FRAME and (upload.frame_index or 0) >= expected:
            logger.warning("upload_frame_out_of_range", extra=upload.model_dump())
        now = self.clock()
        window = self.store.record_open_upload(
            session.user_id, upload.session_id, upload.window_index, upload.kind, upload.frame_index, now
        )
        if window is None:
            return self._late_upload(session, upload, now)
        if self._is_complete(window):
            closed = self.close_window(upload.session_id, upload.window_index, CloseReason.COMPLETE)
            if closed is not None:
                return _outcome("closed", upload, closed.frameCount)
        return _outcome("buffered", upload, window.frame_count)

    def _late_upload(self, session: CaptureSession, upload: UploadedObject, now: float) -> UploadOutcome:
        is_new = self.store.record_late_upload(
            upload.session_id, upload.window_index, upload.kind, upload.frame_index, now
        )
        if not is_new:
            return _outcome("duplicate", upload)
        if not self.store.count_rerun(upload.session_id, upload.window_index, self.settings.capture_max_window_reruns):
            # Each re-run is a paid ingest: a window re-runs a bounded number of times; the object is kept.
            logger.warning(
                "late_upload_kept_not_rerun",
                extra={"session_id": upload.session_id, "window_index": upload.window_index},
            )
            return _outcome("kept", upload)
        self.invoker.invoke_async(
            self.settings.retrigger_function_name,
            {
                "sessionId": upload.session_id,
                "userId": session.user_id,
                "windowIndices": [upload.window_index],
                "force": True,
            },
        )
        logger.info(
            "late_upload_retriggered",
            extra={"session_id": upload.session_id, "window_index": upload.window_index},
        )
        return _outcome("retriggered", upload)

    def close_window(self, session_id: str, window_index: int, reason: CloseReason) -> ClosedWindow | None:
        """Close a window and invoke ingest for it — only the caller whose conditional write wins does."""
        window = self.store.close_window(session_id, window_index, reason.value, self.clock())
        if window is None:
            return None
        crash_point("capture.window_closed")
        payload = {
            "sessionId": session_id,
            "userId": window.user_id,
            "windowIndex": window_index,
            "frameCount": window.frame_count,
        }
        try:
            self.invoker.invoke_async(self.settings.ingest_function_name, payload)
        except Exception:
            # Give the window back so the event's retry or the sweeper closes it again: never lose one.
            self.store.reopen_window(window)
            raise
        crash_point("capture.ingest_invoked")
        self.store.mark_ingest_invoked(session_id, window_index, window.frame_count, self.clock())
        logger.info("window_closed", extra={**payload, "reason": reason.value})
        return ClosedWindow(windowIndex=window_index, frameCount=window.frame_count, reason=reason)

    def sweep(self) -> SweepResult:
        """Close every window whose first upload is older than the wall-time limit."""
        cutoff = self.clock() - self.settings.capture_close_after_s
        closed = [
            window
            for session_id, index in list(self.store.overdue_windows(cutoff))
            if (window := self.close_window(session_id, index, CloseReason.TIMEOUT)) is not None
        ]
        return SweepResult(closedWindows=closed)


def _outcome(status: str, upload: UploadedObject, frame_count: int | None = None) -> UploadOutcome:
    return UploadOutcome(
        status=status, sessionId=upload.session_id, windowIndex=upload.window_index, frameCount=frame_count
    )


def _valid_session_id(session_id: str) -> bool:
    return 0 < len(session_id) <= 64 and all(c.isalnum() or c in "-_" for c in session_id)


def build_capture_service(
    settings: CaptureSettings, store: CaptureStatePort, invoker: FunctionInvoker
) -> CaptureService:
    """The capture service on `store`, the deployment's bucket (uploads signed by S3) and `invoker`."""
    import boto3
    from botocore.config import Config

    s3 = boto3.client("s3", config=Config(signature_version="s3v4"))
    return CaptureService(settings, store, s3, invoker)
