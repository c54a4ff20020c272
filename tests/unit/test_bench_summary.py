"""bench/run_all.py keeps a compact, committed summary: one entry per benchmark, replaced by its latest run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import run_all

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_figures_keep_scalars_and_short_lists_by_path_and_stop_at_the_cap() -> None:
    report = {
        "machine": "x86_64 2 cpu",
        "sizes": {"1000000": {"ms": 24.3, "ok": True, "top": [1, 2, 3]}},
        "long": list(range(10)),
        "text": "x" * 200,
    }
    assert run_all.figures(report) == {
        "machine": "x86_64 2 cpu",
        "sizes.1000000.ms": 24.3,
        "sizes.1000000.ok": True,
        "sizes.1000000.top": [1, 2, 3],
    }
    many = {f"k{i}": i for i in range(run_all.MAX_FIGURES + 20)}
    assert len(run_all.figures(many)) == run_all.MAX_FIGURES


def test_a_run_replaces_its_own_entry_and_keeps_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a summary holding two benchmarks
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"ppr": {"source": "README.md"}, "retrieval": {"source": "README.md"}}))
    monkeypatch.setattr(run_all, "SUMMARY", summary)
    # WHEN ppr runs again
    run_all.record_summary("ppr", {"speedup": 26.6}, {"cpu": "test", "cores": 2, "load_average": [0.5]})
    # THEN ppr's entry is this run's, with its command, and retrieval's is untouched
    written = json.loads(summary.read_text())
    assert written["retrieval"] == {"source": "README.md"}
    assert written["ppr"]["figures"] == {"speedup": 26.6}
    assert written["ppr"]["source"] == "bench/run_all.py" and written["ppr"]["command"] == "python -m bench.bench_ppr"


def test_the_committed_summary_names_each_benchmarks_date_machine_and_command() -> None:
    summary = json.loads((ROOT / "bench" / "results" / "summary.json").read_text())
    for name, entry in summary.items():
        assert {"source", "date", "machine", "command", "figures"} <= set(entry), name
        assert entry["figures"], name
