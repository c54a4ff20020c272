"""The demo path on the short sample with the REAL local models (llama.cpp SmolLM2, MiniLM, Whisper tiny.en)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from worldmm.config import Settings
from worldmm.db.local import start_local_database
from worldmm.demo import run_demo

pytestmark = pytest.mark.e2e

SHORT_SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "short-session"
PRESENTATION_SAID = (datetime(2025, 3, 11, 8, 1, 30, tzinfo=UTC), datetime(2025, 3, 11, 8, 2, tzinfo=UTC))
"""The short sample's window 3, where Marco says his presentation is on Friday at two."""


def test_demo_on_the_short_sample_answers_from_the_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a fresh local profile (its own embedded PostgreSQL, real local models, no network)
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    tmp_path.chmod(0o755)
    local = start_local_database(home / "pgdata")
    settings = Settings(
        worldmm_profile="local",
        worldmm_home=home,
        database_url=local.app_url,
        database_admin_url=local.admin_url,
        llm_provider="local",
        embedding_provider="local",
        embedding_dim=384,
        transcriber="local",
    )
    # WHEN the demo ingests the short sample and asks about it through the real chat handler
    answers = run_demo(settings, SHORT_SAMPLE, questions=("When is Marco's presentation?",))
    # THEN the answer states the fact (Friday), names when it was said, and cites the window it was said in
    answer = answers[0]
    assert "friday" in answer.answer.lower(), answer.answer
    citations = answer.trace["citations"]
    assert citations, answer.trace
    starts = [datetime.fromisoformat(c["start_time"]) for c in citations]
    ends = [datetime.fromisoformat(c["end_time"]) for c in citations]
    assert any(s < PRESENTATION_SAID[1] and PRESENTATION_SAID[0] < e for s, e in zip(starts, ends, strict=True))
    assert f"{starts[0].hour}:{starts[0].minute:02d}" in answer.answer, answer.answer
    # AND re-running resumes: every window is skipped as complete, nothing is ingested again
    capsys.readouterr()
    again = run_demo(settings, SHORT_SAMPLE, questions=())
    assert again == []
    assert "skipped_complete=4" in capsys.readouterr().out
