"""`bench.bench_spoken_facts` renders a session the capture API could have uploaded: each window's own speech."""

from __future__ import annotations

import wave
from pathlib import Path

import pytest

from bench.bench_spoken_facts import QUESTIONS, SPEECH, WINDOW_S, render_session
from worldmm.demo import load_questions

pytestmark = pytest.mark.unit


def test_each_window_gets_thirty_seconds_of_its_own_speech_and_the_questions_load(tmp_path: Path) -> None:
    session = render_session(tmp_path / "session")
    for index in range(len(SPEECH)):
        with wave.open(str(session / f"window_{index}" / "audio.wav")) as audio:
            assert audio.getnframes() == audio.getframerate() * WINDOW_S
            samples = audio.readframes(audio.getnframes())
        assert any(samples[: len(samples) // 2]), "speech at the start of the window"
        assert len(list((session / f"window_{index}").glob("*.jpg"))) == 16
    assert not list(session.glob("audio.*")), "no whole recording: windows are transcribed as uploaded"
    asked = load_questions(session)
    assert [q.question for q in asked] == [q["question"] for q in QUESTIONS]
    assert [q.refusal for q in asked] == [bool(q.get("refusal")) for q in QUESTIONS]
