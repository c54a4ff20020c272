"""Window captioning: what was heard, tidied by a text model or described with the frames by one that sees.

The caption's source is recorded on the segment (`CaptionMode`): `heard` is the transcript verbatim (no
model: the local profile's small LLM sees no frames and invents scenes), `tidied` a text model's
first-person rewrite of what was heard, `seen` a vision model's description of the frames and what was
heard. A model answer that cannot be used degrades the window to `heard`, never to an invention.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

from aws_lambda_powertools import Logger
from pydantic import BaseModel

from worldmm.config import CaptionMode
from worldmm.errors import ModelOutputError
from worldmm.llm.port import LLM, LLMResponse
from worldmm.llm.structured import NonPlaceholderStr, build_request, extract_json, is_placeholder
from worldmm.media.frames import uniform_sample
from worldmm.media.settings import CaptionSettings

PURPOSE = "caption"
HEARD_PREFIX = "I heard: "
MAX_CAPTION_CHARS = 2000
MAX_TRANSCRIPT_CHARS = 12000
_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)

logger = Logger(child=True)


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
        if caption.lstrip().startswith(("{", "[", "```")):
            # JSON that does not parse is a cut-off or broken answer (a server may not report why), not prose.
            raise ModelOutputError(f"caption: JSON that does not parse ({caption.strip()[:40]!r})")
    caption = " ".join((caption or "").split())
    if is_placeholder(caption):
        raise ModelOutputError(f"caption: no content in the answer ({caption[:40]!r})")
    return caption[:MAX_CAPTION_CHARS]


@dataclass(frozen=True)
class WindowCaption:
    """A window's caption, where it came from, and the model call it cost (None: no model was asked)."""

    text: str
    source: CaptionMode
    response: LLMResponse | None = None


def heard_caption(transcript: str) -> str:
    """The caption built from what was heard alone: the transcript, marked as heard ("" when silent)."""
    heard = " ".join(transcript.split())
    return f"{HEARD_PREFIX}{heard}"[:MAX_CAPTION_CHARS] if heard else ""


def caption_window(llm: LLM, settings: CaptionSettings, frames: list[bytes], transcript: str) -> WindowCaption:
    """Caption a window as `settings.caption_mode_effective` says; the result names its source.

    `seen` sends `settings.caption_frames` of the frames with the transcript (no frames: the model only
    tidies what was heard); `tidied` sends the transcript alone; `heard` asks no model, nor does a window
    with nothing a model could work from. An unusable model answer (unparsable, truncated, a copied
    placeholder) falls back to what was heard; a silent window's unusable answer raises.
    """
    mode = settings.caption_mode_effective
    heard = heard_caption(transcript)
    chosen = uniform_sample(frames, settings.caption_frames) if frames and mode == CaptionMode.SEEN else []
    if mode == CaptionMode.HEARD or not (heard or chosen):
        # Nothing for a model to work from but the transcript (or nothing at all): no model is asked.
        return WindowCaption(heard, CaptionMode.HEARD)
    request = build_request(
        PURPOSE,
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=CaptionResult,
        images=[frame_data_url(f) for f in chosen] or None,
        transcript=transcript.strip()[:MAX_TRANSCRIPT_CHARS],
    )
    response: LLMResponse | None = None
    try:
        response = llm.complete(request)
        caption = parse_caption(response.text)
    except ModelOutputError as exc:
        if not heard:
            raise
        # A weak model's unusable caption degrades to what was heard (real data, flagged in the log).
        preview = response.text[:80] if response is not None else str(exc)[:80]
        logger.warning("caption_fallback_transcript", extra={"answer_preview": preview})
        return WindowCaption(heard, CaptionMode.HEARD, response)
    return WindowCaption(caption, CaptionMode.SEEN if chosen else CaptionMode.TIDIED, response)
