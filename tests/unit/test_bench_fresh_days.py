"""The fresh-days evaluation's scoring and its `--code-tree` import path (no memory is built here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.bench_fresh_days import commit_of, days_of, percentile, summarise
from worldmm.demo import NO_MEMORY, DemoAnswer, SampleQuestion

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _answer(kind: str, text: str, seconds: float, facts: tuple[str, ...] = (), refusal: bool = False) -> DemoAnswer:
    expected = SampleQuestion(f"q-{kind}-{seconds}", kind, "?", "!", facts, refusal)
    return DemoAnswer("?", text, None, {}, seconds, expected)


def test_summary_counts_right_per_kind_refusals_and_percentiles() -> None:
    answers = [
        _answer("price", "It was $12.", 1.0, ("12|twelve",)),
        _answer("price", "I don't remember that.", 2.0, ("7|seven",)),
        _answer("time", "At four.", 3.0, ("at four",)),
        _answer("unanswerable", NO_MEMORY, 4.0, refusal=True),
        _answer("unanswerable", "At the cinema.", 10.0, refusal=True),
    ]
    report = summarise(answers, heard="twelve seven at four")
    assert (report["right"], report["asked"]) == (3, 5)
    assert report["per_kind"] == {
        "price": {"right": 1, "asked": 2},
        "time": {"right": 1, "asked": 1},
        "unanswerable": {"right": 1, "asked": 2},
    }
    assert (report["refusals_right"], report["refusals_asked"], report["false_refusals"]) == (1, 2, 1)
    assert report["false_refusal_share"] == round(1 / 3, 3)
    assert (report["p50_s"], report["p95_s"]) == (3.0, 10.0)
    assert [w["expected"] for w in report["wrong"]] == ["!", "!"]


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 0.95) == 19.0
    assert percentile(values, 0.5) == 10.0
    assert percentile([3.0], 0.95) == 3.0


def test_days_are_taken_in_day_order(tmp_path) -> None:
    for number in (10, 2, 1):
        (tmp_path / f"day-{number}").mkdir()
        (tmp_path / f"day-{number}" / "metadata.json").write_text("{}")
    (tmp_path / "day-3").mkdir()  # no metadata: not a recording
    assert [p.name for p in days_of(tmp_path)] == ["day-1", "day-2", "day-10"]


def test_code_tree_imports_worldmm_and_handlers_from_the_other_checkout(tmp_path) -> None:
    # GIVEN a checkout whose worldmm and handlers are stand-ins (no demo: the evaluation stops after the check)
    tree = tmp_path / "old"
    for package in ("worldmm", "handlers"):
        (tree / package).mkdir(parents=True)
        (tree / package / "__init__.py").write_text("")
    days = tmp_path / "days"
    days.mkdir()
    # WHEN the evaluation runs with --code-tree
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_fresh_days", str(days), "--code-tree", str(tree)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # THEN the subprocess imported both from the other tree, not from this checkout
    assert f"worldmm imported from {tree.resolve()}/worldmm/__init__.py" in done.stderr
    assert f"handlers from {tree.resolve()}/handlers/__init__.py" in done.stderr
    assert done.returncode != 0  # the stand-in has no worldmm.demo


def test_a_report_names_the_code_by_commit_not_by_path(tmp_path) -> None:
    assert commit_of(tmp_path) == "not a git checkout"

    def git(*words: str) -> str:
        done = subprocess.run(["git", "-C", str(tmp_path), *words], capture_output=True, text=True, check=True)
        return done.stdout.strip()

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    head = git("rev-parse", "HEAD")
    assert commit_of(tmp_path) == head
    (tmp_path / "a.py").write_text("x = 2\n")
    assert commit_of(tmp_path) == f"{head}+changes"
