"""The committed EgoLife slice (tests/data/egolife) is small, whole, and says what it holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from worldmm.eval.datasets import load_egolife

pytestmark = pytest.mark.unit

SLICE = Path(__file__).resolve().parents[2] / "tests" / "data" / "egolife"
MAX_BYTES = 2_000_000


def _questions() -> list[dict[str, object]]:
    return [json.loads(line) for line in (SLICE / "EgoLifeQA_A1_JAKE_dev.jsonl").read_text("utf-8").splitlines()]


def test_the_slice_is_at_most_two_megabytes() -> None:
    assert sum(path.stat().st_size for path in SLICE.iterdir()) <= MAX_BYTES


def test_every_question_of_the_slice_has_all_its_evidence_in_the_slice() -> None:
    # GIVEN the slice as the evaluation loads it
    benchmark = load_egolife(SLICE)
    # THEN no question was dropped for evidence outside it, and the windows are consecutive in time
    assert (len(benchmark.windows), len(benchmark.questions)) == (250, 42)
    assert len(benchmark.questions) == len(_questions())
    assert {w.session_id for w in benchmark.windows} == {"egolife-day1"}
    known = {w.window_id for w in benchmark.windows}
    assert all(set(q.evidence) <= known and q.evidence for q in benchmark.questions)


def test_the_readme_lists_the_question_ids_the_slice_holds() -> None:
    # The question ids are documented so the held-out split of the questions can be checked against them.
    readme = (SLICE / "README.md").read_text("utf-8")
    listed = re.search(r"question ids: ([\d, ]+)\.", readme)
    assert listed is not None
    assert listed.group(1).split(", ") == [str(q["id"]) for q in _questions()]
    assert "MIT" in readme and "scripts/cut_egolife_slice.py" in readme
