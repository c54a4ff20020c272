"""The question's own time reference: named ranges, direction, and the 'as of' bound."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from worldmm.retrieval.timeref import TimeFocus, parse_time_reference

pytestmark = pytest.mark.unit


def d(day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, second, tzinfo=UTC)


NOW = d(18, 15, 30)  # a Wednesday afternoon


def test_timeref_without_a_phrase_is_bounded_by_now_only() -> None:
    ref = parse_time_reference("Where did I leave my blue notebook?", NOW)
    assert ref.until == NOW and ref.since is None and ref.focus == TimeFocus.NONE


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        ("What did I eat yesterday?", d(17), d(18)),
        ("Who did I meet yesterday morning?", d(17, 5), d(17, 12)),
        ("What did I do this morning?", d(18, 5), d(18, 12)),
        ("What did I buy today?", d(18), NOW),
        ("What did we cook last night?", d(17, 18), d(17, 23, 59, 59)),
        ("Where was I on Monday?", d(16), d(17)),
        ("What was I doing two hours ago?", d(18, 12, 30), d(18, 14, 30)),
    ],
)
def test_timeref_named_ranges(question: str, since: datetime, until: datetime) -> None:
    ref = parse_time_reference(question, NOW)
    assert (ref.since, ref.until) == (since, until)
    assert ref.phrase


def test_timeref_never_reaches_past_now() -> None:
    # "this afternoon" asked at 15:30 ends at 15:30, not 18:00
    ref = parse_time_reference("Who called me this afternoon?", NOW)
    assert ref.until == NOW and ref.since == datetime(2026, 3, 18, 12, tzinfo=UTC)


@pytest.mark.parametrize("question", ["What is planned this evening?", "How late is Katrina working tonight?"])
def test_timeref_an_evening_not_yet_begun_is_no_range(question: str) -> None:
    ref = parse_time_reference(question, datetime(2026, 3, 18, 9, tzinfo=UTC))
    assert ref.since is None and ref.phrase is None


@pytest.mark.parametrize(
    ("question", "focus"),
    [
        ("Who used the black pen last time?", TimeFocus.RECENT),
        ("What was in the pot before?", TimeFocus.RECENT),
        ("Who used the screwdriver first?", TimeFocus.EARLIEST),
        ("Who originally used the scissors?", TimeFocus.EARLIEST),
        ("What does Tasha like to drink?", TimeFocus.NONE),
    ],
)
def test_timeref_direction(question: str, focus: TimeFocus) -> None:
    assert parse_time_reference(question, NOW).focus == focus


@pytest.mark.parametrize(
    ("question", "day"),
    [("What did I do on Wednesday?", 18), ("What did I do last Wednesday?", 11), ("What did I do on Friday?", 13)],
)
def test_timeref_a_weekday_is_read_from_the_moment_asked_and_on_that_weekday_means_today(
    question: str, day: int
) -> None:
    # "on Wednesday" asked on a Wednesday is that day; "last Wednesday" the week before; "on Friday" the last one
    assert parse_time_reference(question, NOW).since == d(day)
