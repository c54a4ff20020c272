"""Candidate answers: the sentences of retrieved memories, each with who said it, when, and what was said around it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise

from worldmm.retrieval.models import MemoryKind, RetrievedMemory

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_HEARD_MARK = re.compile(r"\(heard:\s*|\bI heard:\s*")
# Another speaker's line as the transcriber writes it ("Emma: That is $4.50."); "Me:" is the wearer's.
_SPEAKER = re.compile(r"^(?P<who>[A-Z][\w'-]*(?: [A-Z][\w'-]*)?):\s+(?P<said>\S.*)$", re.S)

LEANING_WORDS = frozenset("it that this these those they them he she him her there then so".split())  # noqa: SIM905
THIRD_PERSON = frozenset("it they them he she him".split())  # noqa: SIM905
"""A sentence leans on the one before it when it opens with a pronoun or deictic word (`LEANING_WORDS`), or has a
third-person pronoun with no name ahead of it ("I have to give it back.")."""


@dataclass(frozen=True)
class Candidate:
    """One sentence of a retrieved memory, as a candidate answer."""

    text: str
    """The sentence as said, without who said it."""
    heard: bool
    memory: RetrievedMemory
    previous: str | None
    following: str | None
    speaker: str | None = None
    """Who said it, when someone other than the wearer did; None for the wearer or when not known."""
    rank: int = 0
    """Where its memory came in retrieval (0: first; adjacent windows after every retrieved one)."""

    @property
    def said(self) -> str:
        """The sentence after who said it ("Emma: That is $4.50.")."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text

    @property
    def leans_back(self) -> bool:
        """Whether it needs the sentence before it to be understood (`THIRD_PERSON`), or opens with a reply."""
        words = [w.strip(",.!?;:") for w in self.text.split()] if self.previous is not None else []
        name = next((i for i, w in enumerate(words) if i and w[:1].isupper() and w != "I"), len(words))
        opening = words[0].casefold() in LEANING_WORDS | {"yes", "no", "sure", "okay"} if words else False
        return opening or any(w.casefold() in THIRD_PERSON for w in words[:name])

    @property
    def quote(self) -> str:
        """The sentence as quoted: after the one it leans on, and before the reply to a question it asks."""
        before = f"{self.previous} " if self.leans_back else ""
        after = f" {self.following}" if self.text.endswith("?") and self.following else ""
        return f"{before}{self.said}{after}"


def pieces(memory_text: str) -> list[tuple[str, bool]]:
    """The sentences of a memory's text, each with whether it was heard (the transcript part) or not."""
    parts: list[tuple[str, bool]] = []
    heard, at = False, 0
    for mark in _HEARD_MARK.finditer(memory_text):
        parts.append((memory_text[at : mark.start()], heard))
        heard, at = True, mark.end()
    parts.append((memory_text[at:], heard))
    parts = [(part.strip().removesuffix(")") if was_heard else part, was_heard) for part, was_heard in parts]
    return [(p.strip(), was_heard) for part, was_heard in parts for p in _SENTENCE.split(part) if p and p.strip()]


def candidates(memories: list[RetrievedMemory]) -> list[Candidate]:
    """Every sentence of `memories`, each with its memory's retrieval rank; a sentence a summary repeats is kept
    as the 30-second window's, which gives the minute it was said.

    A 30-second window's sentences run on into the next window's when that window follows it without a gap
    (`ADJACENT_S`): what was said just before or after a sentence may be in its neighbour."""
    said = {memory.id: pieces(memory.text) for memory in memories}
    before: dict[tuple[str, int], str] = {}
    after: dict[tuple[str, int], str] = {}
    windows = sorted((m for m in memories if _is_window(m)), key=lambda m: m.start_time or datetime.min)
    for one, two in pairwise(windows):
        gap = (two.start_time or datetime.max) - (one.end_time or one.start_time or datetime.min)
        if said[one.id] and said[two.id] and timedelta(0) <= gap <= timedelta(seconds=ADJACENT_S):
            after[(one.id, len(said[one.id]) - 1)] = said[two.id][0][0]
            before[(two.id, 0)] = said[one.id][-1][0]
    out: list[Candidate] = []
    seen: set[str] = set()
    for rank in sorted(range(len(memories)), key=lambda i: not _is_window(memories[i])):  # windows' wording first
        memory = memories[rank]
        lines = said[memory.id]
        for i, (sentence, heard) in enumerate(lines):
            previous = _as_said(lines[i - 1][0] if i > 0 else before.get((memory.id, i)))
            following = _as_said(lines[i + 1][0] if i + 1 < len(lines) else after.get((memory.id, i)))
            tagged = _SPEAKER.match(sentence)
            speaker, text = (tagged.group("who"), tagged.group("said")) if tagged else (None, sentence)
            speaker = None if speaker in ("Me", "I") else speaker
            key = f"{memory.memory_type}:{speaker}:{text.casefold()}"
            if key not in seen:
                seen.add(key)
                out.append(Candidate(text, heard, memory, previous, following, speaker, rank))
    return out


def _as_said(sentence: str | None) -> str | None:
    """A neighbouring sentence as quoted: another speaker's with their name, the wearer's without "Me:"."""
    return sentence.removeprefix("Me: ").removeprefix("I: ") if sentence else None


ADJACENT_S = 5
"""Windows at most this many seconds apart are one stretch of talk."""


def _is_window(memory: RetrievedMemory) -> bool:
    return memory.memory_type == MemoryKind.EPISODIC and memory.duration_seconds == 30 and memory.start_time is not None
