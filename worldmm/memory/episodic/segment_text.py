"""The text an episodic memory shows and is searched by: its caption plus what was heard."""

from __future__ import annotations

MAX_HEARD_CHARS = 600


def segment_memory_text(caption: str | None, transcript: str | None) -> str:
    """Caption, then the window's transcript when it adds words the caption does not already quote.

    The transcript is the raw record of what was said (ASR output): keeping it beside the caption means a
    memory keeps the names and plans that were heard even when a caption paraphrases or misses them.
    """
    caption = " ".join((caption or "").split())
    heard = " ".join((transcript or "").split())[:MAX_HEARD_CHARS]
    if not heard or heard.casefold() in caption.casefold():
        return caption
    if not caption:
        return f"(heard: {heard})"
    return f"{caption} (heard: {heard})"
