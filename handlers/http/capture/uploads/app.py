"""POST /sessions/{id}/frames and /sessions/{id}/audio: presigned uploads for a window's frames (FramePost)
and its audio chunk (AudioPost). CaptureFramesFunction and CaptureAudioFunction both run this module."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from handlers.http.common import current_user, entry_point, make_app, parse_body
from worldmm.capture.models import PresignAudioRequest, PresignFramesRequest

app = make_app()
logger = Logger()  # service: POWERTOOLS_SERVICE_NAME (template.yaml)


@app.post("/sessions/<session_id>/frames")
def presign_frames(session_id: str) -> dict[str, Any]:
    from worldmm.services import get_services

    user = current_user(app)
    request = parse_body(app, PresignFramesRequest)
    return get_services().capture.presign_frames(user, session_id, request).model_dump(mode="json")


@app.post("/sessions/<session_id>/audio")
def presign_audio(session_id: str) -> dict[str, Any]:
    from worldmm.services import get_services

    user = current_user(app)
    request = parse_body(app, PresignAudioRequest)
    return get_services().capture.presign_audio(user, session_id, request).model_dump(mode="json")


lambda_handler = entry_point(app, logger)
