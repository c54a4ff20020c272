"""Runs the whole pytest suite; 'no tests collected' is a failure, not a pass."""

from __future__ import annotations

import sys

import pytest

if __name__ == "__main__":
    code = pytest.main(["tests", *sys.argv[1:]])
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        print("no tests were collected: failing", file=sys.stderr)
        code = 1
    sys.exit(int(code))
