"""How long a model's next call is expected to take, and whether it still fits an answer's deadline."""

from __future__ import annotations

import time

import pytest

from worldmm.llm.call_times import KEPT_OUT_TO_FORGET, RECENT_CALLS, CallTimes


def test_a_call_not_made_yet_is_expected_to_take_the_unseen_time() -> None:
    times = CallTimes(unseen_s=2.0)
    assert times.expected("judge") == 2.0
    assert not times.fits("judge", time.perf_counter() + 1.0)
    assert times.fits("judge", time.perf_counter() + 10.0)


def test_the_longest_recent_call_is_expected_until_it_ages_out() -> None:
    times = CallTimes(unseen_s=2.0)
    times.record("read", 3.0)
    times.record("judge", 0.5)
    assert (times.expected("read"), times.expected("judge")) == (3.0, 0.5)
    for _ in range(RECENT_CALLS):
        times.record("read", 1.0)
    assert times.expected("read") == 1.0


def test_without_a_deadline_every_call_fits() -> None:
    times = CallTimes(unseen_s=1e9)
    assert times.fits("read", None)


def test_a_call_older_than_the_memory_says_nothing_of_the_next_one() -> None:
    # GIVEN a slow reading a while ago (that made every later one be skipped, so none was recorded since)
    now = [1000.0]
    times = CallTimes(unseen_s=2.0, remember_s=600.0, clock=lambda: now[0])
    times.record("read", 9.0)
    assert times.expected("read") == 9.0
    # WHEN the memory's span passes: the kind is expected to take the unseen time again, so it is tried
    now[0] += 601.0
    assert times.expected("read") == 2.0


def test_a_larger_call_is_expected_to_take_longer_in_proportion() -> None:
    times = CallTimes(unseen_s=2.0)
    times.record("read", 1.0, size=200)
    times.record("read", 1.0, size=400)
    # the slowest per unit of size (1 s for 200 characters) says how long 600 characters take; a smaller call
    # is expected to take no less than the longest recent one (its prompt's start may not be cached)
    assert times.expected("read", 600) == pytest.approx(3.0)
    assert times.expected("read", 100) == pytest.approx(1.0)


def _room(seconds: float) -> float:
    return time.perf_counter() + seconds


def test_one_slow_call_that_keeps_its_kind_out_is_forgotten() -> None:
    # GIVEN four judgements of 1 s and one of 3 s: with 2 s left, the slowest keeps the next one out
    times = CallTimes(unseen_s=2.0)
    for seconds in (1.0, 1.0, 3.0, 1.0, 1.0):
        times.record("judge", seconds)
    for _ in range(KEPT_OUT_TO_FORGET - 1):
        assert not times.fits("judge", _room(2.0))
    assert times.expected("judge") == 3.0
    # WHEN it has kept its kind out that many times in a row: the kind is expected from the rest
    assert not times.fits("judge", _room(2.0))
    assert times.expected("judge") == 1.0
    assert times.fits("judge", _room(2.0))


def test_a_call_made_in_between_starts_the_count_again() -> None:
    times = CallTimes(unseen_s=2.0)
    for seconds in (1.0, 1.0, 3.0, 1.0):
        times.record("judge", seconds)
    for _ in range(KEPT_OUT_TO_FORGET - 1):
        assert not times.fits("judge", _room(2.0))
    times.record("judge", 1.0)
    assert not times.fits("judge", _room(2.0))
    assert times.expected("judge") == 3.0


@pytest.mark.parametrize(
    ("recorded", "room_s"),
    [
        ((1.2, 1.4, 1.5, 1.8, 2.0), 1.6),  # a kind's usual spread: the slowest keeps one out but is no outlier
        ((1.0, 1.0, 3.0, 1.0, 1.0), 0.5),  # even the typical call would miss the deadline: nothing against it
        ((3.0,), 2.0),  # a kind's only call: nothing to say it was slow
    ],
)
def test_a_call_that_keeps_its_kind_out_is_kept_when_it_is_no_outlier(
    recorded: tuple[float, ...], room_s: float
) -> None:
    times = CallTimes(unseen_s=2.0)
    for seconds in recorded:
        times.record("read", seconds)
    for _ in range(3 * KEPT_OUT_TO_FORGET):
        assert not times.fits("read", _room(room_s))
    assert times.expected("read") == max(recorded)


def test_the_call_forgotten_is_the_slowest_at_the_size_asked() -> None:
    # GIVEN a short call slow for its size (1 s for 100 characters) and longer ones of 1.5 s for 600
    times = CallTimes(unseen_s=2.0)
    times.record("read", 1.0, size=100)
    for _ in range(2):
        times.record("read", 1.5, size=600)
    # WHEN 600 characters are kept out by the short call's pace (6 s expected), the typical 1.5 s would fit
    for _ in range(KEPT_OUT_TO_FORGET):
        assert not times.fits("read", _room(2.0), size=600)
    assert times.expected("read", 600) == pytest.approx(1.5)
