"""Window captioning: a few of the sampled frames plus the transcript → one first-person caption."""

from __future__ import annotations

import base64
import re

from aws_lambda_powertools import Logger
from pydantic import BaseModel

from worldmm.config import Settings
from worldmm.errors import ModelOutputError
from worldmm.ingest.frames import uniform_sample
from worldmm.llm.port import LLM, LLMResponse
from worldmm.llm.structured import NonPlaceholderStr, build_request, extract_json, is_placeholder

PURPOSE = "caption"
MAX_CAPTION_CHARS = 2000
MAX_TRANSCRIPT_CHARS = 12000
_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)

logger = Logger(service="worldmm", child=True)


class CaptionResult(BaseModel):
    """The caption prompt's answer."""

    caption: NonPlaceholderStr


def frame_data_url(frame: bytes) -> str:
    """A JPEG frame as an OpenAI `image_url` data URL."""
    return "data:image/jpeg;base64," + base64.b64encode(frame).decode("ascii")


def parse_caption(text: str) -> str:
    """The caption in a model's answer: JSON `{"caption": ...}`, or the plain text when it sent no JSON."""
    caption: str | None = None
    try:
        value = extract_json(text)
    except ModelOutputError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("caption"), str):
        caption = value["caption"]
    elif value is None:
        caption = _THINK.sub("", text)
    caption = " ".join((caption or "").split())
    if is_placeholder(caption):
        raise ModelOutputError(f"caption: no content in the answer ({caption[:40]!r})")
    return caption[:MAX_CAPTION_CHARS]


def caption_window(
    llm: LLM, settings: Settings, frames: list[bytes], transcript: str
) -> tuple[str, LLMResponse]:
    """Caption a window from `settings.caption_frames` of its frames (none: from the transcript alone)."""
    chosen = uniform_sample(frames, settings.caption_frames) if frames else []
    request = build_request(
        PURPOSE,
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=CaptionResult,
        images=[frame_data_url(f) for f in chosen] or None,
        transcript=transcript.strip()[:MAX_TRANSCRIPT_CHARS],
    )
    response = llm.complete(request)
    try:
        return parse_caption(response.text), response
    except ModelOutputError:
        heard = " ".join(transcript.split())
        if not heard:
            raise
        # A weak model's unusable caption degrades to what was heard (real data, flagged in the log).
        logger.warning("caption_fallback_transcript", extra={"answer_preview": response.text[:80]})
        return f"I heard: {heard}"[:MAX_CAPTION_CHARS], response
