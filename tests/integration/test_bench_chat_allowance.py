"""bench/bench_chat_allowance.py runs, and what it measures holds: a user looping chat is refused within the
allowance and costs at most it in model calls, while another user's questions are all answered."""

from __future__ import annotations

import pytest

from bench.bench_chat_allowance import run

pytestmark = pytest.mark.integration


def test_bench_chat_allowance_a_looping_user_costs_at_most_the_allowance_and_another_goes_on() -> None:
    # WHEN Alice asks 20 questions a second for 1.5 s (30: more than the 20 her allowance holds)
    result = run(seconds=1.5, rate=20, model_latency_s=0.01, baseline=1)
    alice, bob = result["alice"], result["bob"]
    # THEN she is refused once her bucket is empty, and her model calls stay within it
    assert alice["refused_429"] > 0 and alice["answered"] <= 20
    assert alice["within_bound"] and alice["model_calls"] <= alice["model_calls_bound"]
    # AND Bob's questions are all answered
    assert bob["answered_during_loop"] == bob["questions_during_loop"] > 0
