"""The transcriber port: audio bytes → text with timed segments (Groq Whisper or faster-whisper)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class TranscriptSegment:
    start_s: float
    end_s: float
    text: str


@dataclass(frozen=True)
class Transcript:
    text: str
    segments: list[TranscriptSegment] = field(default_factory=list)

    def window(self, start_s: float, end_s: float) -> str:
        """The text of the segments whose midpoint falls in [start_s, end_s)."""
        parts = [s.text.strip() for s in self.segments if start_s <= (s.start_s + s.end_s) / 2 < end_s]
        return " ".join(p for p in parts if p)


class Transcriber(Protocol):
    """Speech to text."""

    def transcribe(self, audio: bytes, filename: str) -> Transcript: ...
