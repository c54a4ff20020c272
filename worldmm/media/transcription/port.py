"""The transcriber port: audio bytes → text with timed segments (Groq Whisper or faster-whisper)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

WEARER = "wearer"
"""A segment's speaker when the wearer said it (its text is written as it was said)."""
SOMEONE = "someone"
"""A segment's speaker when a voice that is not the wearer's, and was never named, said it."""

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class TranscriptSegment:
    start_s: float
    end_s: float
    text: str
    speaker: str | None = None
    """Who said it: `WEARER`, a name, `SOMEONE`, or None when not known."""

    def said(self) -> str:
        """The text as memory keeps it: each sentence of another speaker's line on a line of its own after
        their name ("Emma: That is $4.50."); the wearer's lines, and lines of an unknown speaker, as said."""
        text = self.text.strip()
        if not text or self.speaker in (None, WEARER):
            return text
        who = str(self.speaker).capitalize() if self.speaker == SOMEONE else self.speaker
        return "\n".join(f"{who}: {sentence}" for sentence in SENTENCE_END.split(text) if sentence)


@dataclass(frozen=True)
class Voice:
    """A voice to know again in a later recording: whose it is (`WEARER` or the name the wearer called it), its
    speaker encoder's unit vector, and how many seconds of speech it was heard from."""

    name: str
    vector: tuple[float, ...]
    seconds: float


@dataclass(frozen=True)
class Transcript:
    text: str
    segments: list[TranscriptSegment] = field(default_factory=list)
    voices: list[Voice] = field(default_factory=list)
    """The voices this recording named (the wearer's and each one the wearer addressed), to be remembered."""

    @classmethod
    def of(cls, segments: list[TranscriptSegment], voices: list[Voice] | None = None) -> Transcript:
        """The transcript of `segments`, its text as memory keeps it (`kept_text`)."""
        return cls(kept_text(segments), segments, voices or [])

    @property
    def words(self) -> str:
        """What was said, without speakers' names."""
        return " ".join(s.text.strip() for s in self.segments if s.text.strip()) if self.segments else self.text

    def window(self, start_s: float, end_s: float, *, speakers: bool = True) -> str:
        """The text of the segments whose midpoint falls in [start_s, end_s), other speakers' lines after
        their names (`TranscriptSegment.said`) unless not `speakers`."""
        inside = [s for s in self.segments if start_s <= (s.start_s + s.end_s) / 2 < end_s]
        return kept_text(inside) if speakers else " ".join(s.text.strip() for s in inside if s.text.strip())


def kept_text(segments: list[TranscriptSegment]) -> str:
    """`segments` as memory keeps them: when any says who said it, a line each (so that a line after another
    speaker's is not read as theirs), else run together."""
    parts = [s.said() for s in segments if s.text.strip()]
    return ("\n" if any(s.speaker is not None for s in segments) else " ").join(parts)


class Transcriber(Protocol):
    """Speech to text. `known`: voices remembered from the wearer's earlier recordings, by which a voice this
    recording never names may still be known (a transcriber that does not tell voices apart ignores them)."""

    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript: ...
