"""Commit subjects say what changed in under 72 characters; numbers and reasons go in the body.

History before `SHORT_SUBJECTS_FROM` kept run logs in its subjects (up to 666 characters); it is left as it was
written. Every commit after it is held to the rule.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SHORT_SUBJECTS_FROM = "ae27d93"
"""The last commit whose subject is a run log; from the next one on, every subject is short."""
LONGEST_SUBJECT = 71


def _git(*args: str) -> str:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("not a git checkout: this test reads the commit history")
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"git {' '.join(args)}: {done.stderr.strip()} (a shallow clone? fetch the whole history)")
    return done.stdout


def test_every_commit_subject_since_the_run_logs_is_under_72_characters() -> None:
    _git("cat-file", "-e", f"{SHORT_SUBJECTS_FROM}^{{commit}}")
    subjects = _git("log", "--no-merges", "--format=%h %s", f"{SHORT_SUBJECTS_FROM}..HEAD").splitlines()
    too_long = [line for line in subjects if len(line.split(" ", 1)[1]) > LONGEST_SUBJECT]
    assert subjects and not too_long, too_long
