"""Speech recognition measured on its own: Whisper tiny.en hears the sample within a word error rate floor on
this CPU's own kernels and on the AVX2 kernels an AVX2-only (or AMD) machine runs, so the answer tests above
do not hinge on one CPU's rounding."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from worldmm.eval.speech import normalized_words, word_error_rate

pytestmark = pytest.mark.e2e

WER_CEILING = 0.18
"""Measured 0.140 at float32 on an AMD EPYC (AVX-512), natively and with CT2_USE_MKL=0 CT2_FORCE_CPU_ISA=AVX2;
int8 gave 0.143 there and other words on an AVX2-only AMD host."""


def test_word_error_rate_counts_substitutions_deletions_and_insertions() -> None:
    assert word_error_rate("the plumber comes at eleven", "the plumber comes at 11") == 0.0
    assert word_error_rate("I like working with music", "I like working with Munich") == pytest.approx(0.2)
    assert word_error_rate("in the drawer of my desk", "in my desk") == pytest.approx(0.5)
    assert word_error_rate("half past three", "half past three o'clock") == pytest.approx(1 / 3)
    assert normalized_words("That is $4.50.") == ["that", "is", "four", "50"]


@pytest.mark.parametrize("isa", ["native", "AVX2"])
def test_the_sample_is_heard_within_the_word_error_rate_floor_on_each_instruction_set(isa: str) -> None:
    env = {**os.environ, "TRANSCRIBER": "local", "WORLDMM_PROFILE": "local"}
    if isa == "AVX2":
        env |= {"CT2_USE_MKL": "0", "CT2_FORCE_CPU_ISA": "AVX2"}
    run = subprocess.run(
        [sys.executable, "-m", "worldmm.cli", "eval-speech"], env=env, capture_output=True, text=True, check=True
    )
    report = json.loads(run.stdout)
    assert report["reference_words"] > 500
    assert report["wer"] <= WER_CEILING, report["transcript"]
