"""The question's own time reference: a range it names ("yesterday morning") and where in time it looks.

Retrieval is "as of" the moment a question is asked: nothing after `now` is visible. Within that, a
question may name a part of the past ("this morning", "yesterday", "last night", "two days ago") —
a range the retrievers filter by — or ask for an end of the timeline ("the last time", "just now",
"first", "originally") — an order used only to break ties between equally relevant memories.
The parser is deterministic and conservative: a phrase it does not know leaves the question unbounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from enum import StrEnum

_PARTS_OF_DAY: dict[str, tuple[time, time]] = {
    "morning": (time(5), time(12)),
    "noon": (time(11), time(14)),
    "lunch": (time(11), time(14, 30)),
    "afternoon": (time(12), time(18)),
    "evening": (time(17), time(23, 59, 59)),
    "dinner": (time(17), time(22)),
    "night": (time(18), time(23, 59, 59)),
}
_NUMBERS = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a couple of": 2}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_AGO = re.compile(r"\b(\d+|one|two|three|four|five|six|an?|a couple of)\s+(minute|hour|day)s?\s+ago\b")
_DAY_PART = re.compile(
    r"\b(this|yesterday|last)\s+(morning|noon|afternoon|evening|night)\b"
    r"|\b(yesterday|today|tonight|day before yesterday)\b"
    r"|\b(?:at|for|during|after|before)\s+(lunch|dinner|noon)\b"
)
_WEEKDAY = re.compile(r"\b(?:on|last)\s+(" + "|".join(_WEEKDAYS) + r")\b")
_RECENT = re.compile(r"\b(last time|the last|most recent(?:ly)?|recently|just now|just|latest|previously|before)\b")
_EARLIEST = re.compile(r"\b(first|originally|initially|the earliest|at the beginning|in the beginning)\b")


class TimeFocus(StrEnum):
    """Which end of the visible timeline the question is after, when relevance ties."""

    NONE = "none"
    RECENT = "recent"
    EARLIEST = "earliest"


@dataclass(frozen=True)
class TimeReference:
    """A question's time bound: memories must end in (`since`, `until`]; `focus` orders ties; `asked_at` is the
    moment the question is read at (a named range may end before it)."""

    until: datetime
    since: datetime | None = None
    focus: TimeFocus = TimeFocus.NONE
    phrase: str | None = None
    asked_at: datetime | None = None

    def unbounded(self) -> TimeReference:
        """The same question with its named range dropped: everything before it was asked ("Marco's
        presentation on Friday" names when the presentation is, not when it was talked about)."""
        return TimeReference(until=self.asked_at or self.until, focus=self.focus)

    def describe(self) -> str:
        """Plain words for a trace: what range was searched and why."""
        until = f"{self.until:%Y-%m-%d %H:%M}"
        span = f"{self.since:%Y-%m-%d %H:%M} – {until}" if self.since else f"before {until}"
        return f"{span} ({self.phrase})" if self.phrase else span


def _day_start(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _range_of_day(day: datetime, part: str | None) -> tuple[datetime, datetime]:
    start = _day_start(day)
    if part is None:
        return start, start + timedelta(days=1)
    begin, end = _PARTS_OF_DAY[part]
    return start.replace(hour=begin.hour, minute=begin.minute), start.replace(
        hour=end.hour, minute=end.minute, second=end.second
    )


def _named_range(question: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    """The range a day/part-of-day phrase names, clipped to `now`; None when there is none."""
    ago = _AGO.search(question)
    if ago:
        count = int(ago.group(1)) if ago.group(1).isdigit() else _NUMBERS[ago.group(1)]
        unit = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1)}[ago.group(2)]
        centre = now - count * unit
        if ago.group(2) == "day":
            start, end = _range_of_day(centre, None)
        else:
            start, end = centre - unit, centre + unit
        return start, min(end, now), ago.group(0)
    match = _DAY_PART.search(question)
    if match:
        phrase = match.group(0)
        which, part, single, meal = match.group(1), match.group(2), match.group(3), match.group(4)
        if single == "day before yesterday":
            return (*_range_of_day(now - timedelta(days=2), None), phrase)
        if single == "yesterday":
            return (*_range_of_day(now - timedelta(days=1), None), phrase)
        if single == "today":
            return _day_start(now), now, phrase
        if single == "tonight":
            start, end = _range_of_day(now, "night")
            return (start, min(end, now), phrase) if start < now else None  # asked before night: none yet
        if meal:
            start, end = _range_of_day(now, meal)
            return (start, min(end, now), phrase) if start < now else None
        day = now - timedelta(days=1) if which in ("yesterday", "last") else now
        if which == "this" and part == "night":
            part = "night"
        start, end = _range_of_day(day, part)
        if start >= now:  # "this evening" asked in the morning: nothing visible yet
            return None
        return start, min(end, now), phrase
    weekday = _WEEKDAY.search(question)
    if weekday:
        target = _WEEKDAYS.index(weekday.group(1))
        back = (now.weekday() - target) % 7  # "on Tuesday" asked on a Tuesday: today; "last Tuesday": a week ago
        if weekday.group(0).startswith("last"):
            back = back or 7
        start, end = _range_of_day(now - timedelta(days=back), None)
        return start, end, weekday.group(0)
    return None


def parse_time_reference(question: str, now: datetime) -> TimeReference:
    """The time bound of `question` asked at `now` (tz-aware): always ends at `now`, maybe a named range."""
    lowered = question.lower()
    focus = TimeFocus.NONE
    if _EARLIEST.search(lowered):
        focus = TimeFocus.EARLIEST
    elif _RECENT.search(lowered):
        focus = TimeFocus.RECENT
    named = _named_range(lowered, now)
    if named is None:
        return TimeReference(until=now, focus=focus)
    since, until, phrase = named
    return TimeReference(until=min(until, now), since=since, focus=focus, phrase=phrase, asked_at=now)
