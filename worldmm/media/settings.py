"""The settings captioning a window reads: the caption mode, how many frames go with the transcript, and the
model that writes it. Part of the settings of whatever captions a window (ingest's)."""

from __future__ import annotations

from worldmm.config import CaptionMode, ComponentSettings


class CaptionSettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    caption_mode_effective: CaptionMode
    caption_frames: int
    extraction_model: str
    extraction_max_tokens: int
