"""How long a model's next call is expected to take, and whether it still fits an answer's deadline."""

from __future__ import annotations

import time

import pytest

from worldmm.llm.call_times import RECENT_CALLS, CallTimes


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
