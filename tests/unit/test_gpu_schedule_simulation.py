"""The week simulation of bench/bench_gpu_schedule.py as a check (simulated time: no CPU-speed dependence)."""

from __future__ import annotations

import argparse

import pytest

from bench.bench_gpu_schedule import run

pytestmark = pytest.mark.unit


def week(**overrides: object) -> dict:
    args = {
        "seed": 7,
        "days": 7,
        "answering": "gpu",
        "ec2_start_s": 40.0,
        "boot_s": 30.0,
        "load_s": 80.0,
        "idle_stop_s": 900.0,
        "chat_idle_stop_s": 300.0,
        **overrides,
    }
    return run(argparse.Namespace(**args))


@pytest.mark.parametrize("answering", ["gpu", "openai"])
@pytest.mark.parametrize("seed", [7, 11])
def test_gpu_schedule_week_bills_within_the_target_and_loses_no_window(answering: str, seed: int) -> None:
    result = week(answering=answering, seed=seed)
    assert result["meets_target"], result
    assert result["gpu_hours_billed"] < result["always_on_hours"] / 4
    assert result["windows_lost"] == 0 and result["windows_duplicated"] == 0
    wait = result["first_window_wait_s"]
    assert wait["max"] <= wait["goal_max"]


def test_gpu_schedule_always_busy_worker_is_never_stopped_mid_session() -> None:
    # GIVEN an idle stop longer than the week: the worker, once started, stays up
    result = week(idle_stop_s=7 * 86_400.0, chat_idle_stop_s=7 * 86_400.0)
    # THEN it is started once, and bills (almost) the whole week from its first start
    assert result["gpu_starts"] == 1 and result["windows_lost"] == 0
