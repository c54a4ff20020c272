"""The scales of episodic memory (spec 001 "Data Flow"): a memory's length in seconds.

A 30 s window, and summaries over 3 min, 10 min and 1 h. They are fixed: the summary tree
(`worldmm.memory.episodic.summary_tree`) is built on exactly these four.
"""

from __future__ import annotations

from enum import IntEnum


class Scale(IntEnum):
    """A memory's length in seconds: a window or a summary."""

    WINDOW = 30
    THREE_MIN = 180
    TEN_MIN = 600
    HOUR = 3600

    @property
    def label(self) -> str:
        """How an answer names it: "30-second", "3-minute", "10-minute", "1-hour"."""
        return _LABELS[self.value]


_LABELS: dict[int, str] = {
    Scale.WINDOW: "30-second",
    Scale.THREE_MIN: "3-minute",
    Scale.TEN_MIN: "10-minute",
    Scale.HOUR: "1-hour",
}

SCALES: tuple[Scale, ...] = tuple(Scale)
SUMMARY_SCALES: tuple[Scale, ...] = (Scale.THREE_MIN, Scale.TEN_MIN, Scale.HOUR)


def label_of(seconds: int | None, default: str = "") -> str:
    """The label of a duration that may not be one of the scales (`default` then)."""
    return _LABELS.get(seconds, default) if seconds is not None else default
