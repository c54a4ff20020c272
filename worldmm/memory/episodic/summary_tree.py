"""Multiscale episodic memory: which windows make which summary, and merging captions into one.

Scales (spec 001 "Data Flow"): 30 s windows; a 3 min summary of six 30 s windows; a 10 min summary of
three 3 min summaries plus the remaining 1 min (two 30 s windows); a 1 h summary of six 10 min ones.

The 3 min summaries are aligned inside their 10 min block so that the two "remaining" windows of a
block are never also claimed by a 3 min summary: in block j (30 s windows 20j..20j+19), 3 min summary
3j+m (m = 0, 1, 2) covers windows 20j+6m..20j+6m+5 and windows 20j+18, 20j+19 go straight to the
10 min summary j. For block 0 this is exactly "3 min k covers windows 6k..6k+5".
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import BaseModel, Field

from worldmm.llm.port import LLM, LLMResponse
from worldmm.llm.structured import NonPlaceholderStr, build_request, complete_structured
from worldmm.memory.settings import MemorySettings
from worldmm.scale import Scale, label_of

_WINDOWS_PER_BLOCK = 20  # 30 s windows in one 10 min block
_WINDOWS_PER_3MIN = 6
_3MIN_PER_BLOCK = 3
_10MIN_PER_HOUR = 6

# A partial summary (closed at session end before all its children exist) needs at least this many
# children: a "summary" of one child would only repeat it at a coarser scale.
PARTIAL_MIN_CHILDREN = 2


@dataclass(frozen=True, order=True)
class SlotKey:
    """A segment's place in a session: its scale (duration in seconds) and index at that scale."""

    duration_seconds: int
    window_index: int


def parent_of(child: SlotKey) -> SlotKey | None:
    """The summary `child` belongs to, or None for a 1 h summary."""
    d, i = child.duration_seconds, child.window_index
    if d == Scale.WINDOW:
        block, offset = divmod(i, _WINDOWS_PER_BLOCK)
        if offset >= _3MIN_PER_BLOCK * _WINDOWS_PER_3MIN:
            return SlotKey(Scale.TEN_MIN, block)
        return SlotKey(Scale.THREE_MIN, _3MIN_PER_BLOCK * block + offset // _WINDOWS_PER_3MIN)
    if d == Scale.THREE_MIN:
        return SlotKey(Scale.TEN_MIN, i // _3MIN_PER_BLOCK)
    if d == Scale.TEN_MIN:
        return SlotKey(Scale.HOUR, i // _10MIN_PER_HOUR)
    if d == Scale.HOUR:
        return None
    raise ValueError(f"unknown scale {d}")


def children_of(parent: SlotKey) -> list[SlotKey]:
    """Every child a complete summary `parent` is merged from, in time order."""
    d, i = parent.duration_seconds, parent.window_index
    if d == Scale.THREE_MIN:
        block, m = divmod(i, _3MIN_PER_BLOCK)
        first = _WINDOWS_PER_BLOCK * block + _WINDOWS_PER_3MIN * m
        return [SlotKey(Scale.WINDOW, first + n) for n in range(_WINDOWS_PER_3MIN)]
    if d == Scale.TEN_MIN:
        covered = _3MIN_PER_BLOCK * _WINDOWS_PER_3MIN  # windows of the block under its 3 min summaries
        return [SlotKey(Scale.THREE_MIN, _3MIN_PER_BLOCK * i + m) for m in range(_3MIN_PER_BLOCK)] + [
            SlotKey(Scale.WINDOW, _WINDOWS_PER_BLOCK * i + n) for n in range(covered, _WINDOWS_PER_BLOCK)
        ]
    if d == Scale.HOUR:
        return [SlotKey(Scale.TEN_MIN, _10MIN_PER_HOUR * i + n) for n in range(_10MIN_PER_HOUR)]
    raise ValueError(f"scale {d} has no children")


@dataclass(frozen=True)
class ChildCaption:
    """One child's contribution to a merge: identity, time span, caption (and what was heard)."""

    segment_id: str
    duration_seconds: int
    start_time: datetime
    end_time: datetime
    caption: str
    transcript: str = ""  # read by the extractive summariser; the LLM merge reads captions only


def fingerprint(children: Sequence[ChildCaption]) -> str:
    """A hash of the children a summary is made from (ids and captions): it changes when a child does."""
    digest = hashlib.sha256()
    for child in sorted(children, key=lambda c: (c.start_time, c.segment_id)):
        digest.update(child.segment_id.encode())
        digest.update(b"\x00")
        digest.update(child.caption.encode())
        digest.update(b"\x01")
    return digest.hexdigest()


class MergeResult(BaseModel):
    """The merge_captions answer."""

    summary: NonPlaceholderStr = Field(min_length=1, description="One coherent first-person summary of the span")


def format_captions(children: Sequence[ChildCaption]) -> str:
    """The numbered, time-stamped caption list the merge prompt reads."""
    ordered = sorted(children, key=lambda c: (c.start_time, c.segment_id))
    lines = []
    for n, child in enumerate(ordered, start=1):
        span = f"{child.start_time:%H:%M:%S}-{child.end_time:%H:%M:%S}"
        lines.append(
            f"{n}. [{span}, {label_of(child.duration_seconds, 'segment')}] {child.caption.strip()}"
        )
    return "\n".join(lines)


def merge_captions(
    llm: LLM, settings: MemorySettings, scale: int, children: Sequence[ChildCaption]
) -> tuple[str, LLMResponse]:
    """Merge the children's captions into one summary of `scale` with `merge_captions.txt`."""
    if not children:
        raise ValueError("nothing to merge")
    request = build_request(
        "merge_captions",
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=MergeResult,
        scale=Scale(scale).label,
        count=len(children),
        captions=format_captions(children),
    )
    result, response = complete_structured(llm, request, MergeResult)
    return result.summary.strip(), response
