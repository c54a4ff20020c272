"""The demo path on the short sample with the REAL local models (llama.cpp SmolLM2, MiniLM, Whisper tiny.en)."""

from __future__ import annotations

from pathlib import Path

import pytest

from worldmm.config import Settings
from worldmm.db.local import start_local_database
from worldmm.demo import run_demo

pytestmark = pytest.mark.e2e

SHORT_SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "short-session"
SAMPLE_NAMES = ("katrina", "emma", "marco", "cappuccino", "milk", "keys", "notebook", "corner", "northwind",
                "plumber", "presentation", "friday", "slides", "kitchen", "hallway", "cafe", "café")


def test_demo_on_the_short_sample_answers_from_the_recording(tmp_path: Path) -> None:
    # GIVEN a fresh local profile (its own embedded PostgreSQL, real local models, no network)
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    tmp_path.chmod(0o755)
    local = start_local_database(home / "pgdata")
    settings = Settings(
        worldmm_profile="local", worldmm_home=home, database_url=local.app_url, database_admin_url=local.admin_url,
        llm_provider="local", embedding_provider="local", embedding_dim=384, transcriber="local",
    )
    # WHEN the demo ingests the short sample and asks about it through the real chat handler
    answers = run_demo(settings, SHORT_SAMPLE, questions=("Who did I talk to in the kitchen this morning?",))
    # THEN the answer is grounded in the recording: it names something of the sample, and the trace shows
    # the retrieved memory it came from
    answer = answers[0]
    retrieved = [i for step in answer.trace["rounds"] for i in step.get("retrieved_ids", [])]
    assert retrieved, f"the agent retrieved nothing: {answer.trace}"
    assert any(name in answer.answer.lower() for name in SAMPLE_NAMES), answer.answer
    # AND re-running resumes instead of re-ingesting
    again = run_demo(settings, SHORT_SAMPLE, questions=())
    assert again == []
