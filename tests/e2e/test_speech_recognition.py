"""Speech recognition measured on its own: Whisper tiny.en hears the sample within a word error rate floor on
this CPU's own kernels and on the AVX2 kernels an AVX2-only (or AMD) machine runs, so the answer tests above
do not hinge on one CPU's rounding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from worldmm.demo import EVENING_SESSION, SAMPLE_SESSION
from worldmm.eval.speech import (
    ScriptTranscriber,
    measure_speech,
    normalized_words,
    window_error_rate,
    word_error_rate,
)
from worldmm.media.transcription.port import Transcript, TranscriptSegment

pytestmark = pytest.mark.e2e

WER_CEILING = 0.18
"""Measured 0.140 at float32 on an AMD EPYC (AVX-512), natively and with CT2_USE_MKL=0 CT2_FORCE_CPU_ISA=AVX2;
int8 gave 0.143 there and other words on an AVX2-only AMD host."""
WINDOW_WER_CEILING = 0.25
"""Window by window (each line must land in the 30-second window it was said in): 0.172 on that machine with
lines timed by their speech; 0.532 when Whisper's segment times alone placed them (a line said after a pause
was timed from the end of the speech before it, a window early)."""

SPEAKERS_RIGHT = 0.7
"""Share of the sample's segments whose speaker is told right (the wearer's, or another's by name): 72 of 88
(0.82) on that machine, with none wrong, 2 another's unnamed, 14 not told (lines of a second or two)."""


def test_word_error_rate_counts_substitutions_deletions_and_insertions() -> None:
    assert word_error_rate("the plumber comes at eleven", "the plumber comes at 11") == 0.0
    assert word_error_rate("I like working with music", "I like working with Munich") == pytest.approx(0.2)
    assert word_error_rate("in the drawer of my desk", "in my desk") == pytest.approx(0.5)
    assert word_error_rate("half past three", "half past three o'clock") == pytest.approx(1 / 3)
    assert normalized_words("That is $4.50.") == ["that", "is", "four", "50"]


def test_a_line_heard_right_in_the_wrong_window_counts_against_the_window_error_rate(tmp_path: Path) -> None:
    lines = [{"window": 0, "text": "Good morning."}, {"window": 1, "text": "We are out of milk."}]
    (tmp_path / "script.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    placed = [TranscriptSegment(1.0, 2.0, "Good morning."), TranscriptSegment(31.0, 33.0, "We are out of milk.")]
    early = [TranscriptSegment(1.0, 2.0, "Good morning."), TranscriptSegment(2.0, 33.0, "We are out of milk.")]
    assert window_error_rate(tmp_path, Transcript("", placed), 30) == 0.0
    # five words missed in window 1 and five inserted in window 0, of seven spoken
    assert window_error_rate(tmp_path, Transcript("", early), 30) == pytest.approx(10 / 7)


def test_the_script_transcriber_hears_every_line_in_its_window() -> None:
    report = measure_speech(ScriptTranscriber(SAMPLE_SESSION), SAMPLE_SESSION)
    assert report.reference_words > 500
    assert (report.wer, report.window_wer) == (0.0, 0.0)


def _heard_within_floors(isa: str, sample: Path, reference_words: int, *after: Path) -> dict[str, Any]:
    """`worldmm eval-speech` of `sample` (heard `after` those recordings) on `isa`, checked against the WER and
    window WER ceilings."""
    env = {**os.environ, "TRANSCRIBER": "local", "WORLDMM_PROFILE": "local"}
    if isa == "AVX2":
        env |= {"CT2_USE_MKL": "0", "CT2_FORCE_CPU_ISA": "AVX2"}
    command = [sys.executable, "-m", "worldmm.cli", "eval-speech", "--sample", str(sample)]
    command += ["--after", *map(str, after)] if after else []
    report: dict[str, Any] = json.loads(
        subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    )
    assert report["reference_words"] > reference_words
    assert report["wer"] <= WER_CEILING, report["transcript"]
    assert report["window_wer"] <= WINDOW_WER_CEILING, report
    return report


@pytest.mark.parametrize("isa", ["native", "AVX2"])
def test_the_sample_is_heard_and_placed_within_the_word_error_rate_floors_on_each_instruction_set(isa: str) -> None:
    report = _heard_within_floors(isa, SAMPLE_SESSION, reference_words=500)
    # AND who said each line: nobody's line is given to another, and most are told
    speakers = report["speakers"]
    assert speakers["wrong"] == 0, speakers
    assert speakers["right"] >= SPEAKERS_RIGHT * sum(speakers.values()), speakers


@pytest.mark.parametrize("isa", ["native", "AVX2"])
def test_the_evening_is_heard_with_each_line_in_the_window_it_was_said_in(isa: str) -> None:
    # GIVEN the evening recording, where Whisper runs a segment from one window's last line into the next
    # window's first (window WER 0.383 when a segment went whole to the speech chunk it overlaps most)
    # THEN its words are heard within the floor and each line lands in its own window (0.155 and 0.155)
    report = _heard_within_floors(isa, EVENING_SESSION, 450, SAMPLE_SESSION)
    # AND heard after the morning, whose voices it then knows, Katrina's lines are hers though nobody says her
    # name all evening: no line is left "someone's" (without the morning's voices 5 were, and right 30 of 43;
    # with them right 36, Marco's one line among them)
    speakers = report["speakers"]
    assert speakers["someone"] == 0, speakers
    assert speakers["right"] >= SPEAKERS_RIGHT * sum(speakers.values()), speakers
