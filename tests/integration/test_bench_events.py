"""bench/bench_events.py, small: its checks hold and it reports a delivery latency within the target."""

from __future__ import annotations

import pytest

from bench.bench_events import run

pytestmark = pytest.mark.integration


def test_the_events_bench_delivers_each_sessions_events_to_its_owner_only() -> None:
    # WHEN 4 sessions of 4 windows are ingested for 2 listening users (and a listening bystander)
    result = run(sessions=4, users=2)
    # THEN 20 events arrived, none to another user, each session exactly 4 + 1, p95 within 2 s
    assert result["problems"] == []
    assert result["events_delivered"] == 20 and result["events_to_another_user"] == 0
    assert result["meets_target"], result["delivery_latency"]
