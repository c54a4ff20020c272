"""Cuts the EgoLife slice the tests use (`tests/data/egolife/`) from the full A1_JAKE week.

The full week (6,223 windows, 19 MB) stays outside the repository; `worldmm eval egolife --data DIR`
reads it. The slice is the run of `--windows` consecutive windows of one day that holds the evidence of
the most development questions (the earliest such run on a tie), and every question whose evidence
windows all lie in it, whenever the question is asked. It is deterministic: the same source files give
the same slice byte for byte. Run by hand; the result is committed:

    python scripts/cut_egolife_slice.py --source DIR     # DIR holds A1_JAKE_windows30s.jsonl and
                                                         # EgoLifeQA_A1_JAKE_dev.jsonl

Windows keep every field but `items` (the raw timed caption and transcript pieces that `caption` and
`transcript` already join; no loader reads them). Questions are copied whole. The README written
beside the slice says where it came from, how it was cut and which question ids it holds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WINDOWS_FILE = "A1_JAKE_windows30s.jsonl"
QUESTIONS_FILE = "EgoLifeQA_A1_JAKE_dev.jsonl"
DROPPED_FIELDS = ("items",)
DEFAULT_DAY = "DAY1"
DEFAULT_WINDOWS = 250
MAX_BYTES = 2_000_000


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def cut(source: Path, day: str, count: int) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """The `count` consecutive windows of `day` (by start time) that hold the most questions' evidence (the
    earliest such run on a tie), and those questions: each one all of whose evidence windows lie in them."""
    with (source / WINDOWS_FILE).open(encoding="utf-8") as handle:
        day_windows = [row for line in handle if (row := json.loads(line))["day"] == day]
    day_windows.sort(key=lambda row: (row["start_s"], row["window_id"]))
    if len(day_windows) < count:
        raise SystemExit(f"{day} has {len(day_windows)} windows, fewer than the {count} asked for")
    position = {row["window_id"]: i for i, row in enumerate(day_windows)}
    with (source / QUESTIONS_FILE).open(encoding="utf-8") as handle:
        all_questions = [json.loads(line) for line in handle]
    spans = [
        (min(at), max(at), question)
        for question in all_questions
        if question["targets"]
        and all(t["window_id"] in position for t in question["targets"])
        and (at := [position[t["window_id"]] for t in question["targets"]])
    ]

    def held(start: int) -> list[dict[str, object]]:
        return [question for first, last, question in spans if start <= first and last < start + count]

    start = max(range(len(day_windows) - count + 1), key=lambda s: (len(held(s)), -s))
    windows = [{k: v for k, v in row.items() if k not in DROPPED_FIELDS} for row in day_windows[start : start + count]]
    return windows, held(start)


def _readme(
    source: Path, day: str, windows: list[dict[str, object]], questions: list[dict[str, object]]
) -> str:
    ids = ", ".join(str(q["id"]) for q in questions)
    asked = ", ".join(f"{d} {n}" for d, n in sorted(Counter(str(q["query_day"]) for q in questions).items()))
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(Counter(str(q["type"]) for q in questions).items()))
    span = f"{day} {windows[0]['start']}–{windows[-1]['end']}"
    return f"""# EgoLife A1_JAKE slice — test data

{len(windows)} consecutive 30-second windows of one wearer's recorded day, gaps and all ({span})
and the {len(questions)} EgoLifeQA development questions whose evidence windows all lie in them. The tests
(`tests/e2e/test_memory_quality.py`) build a memory from these windows and score evidence recall.
This file is written by `scripts/cut_egolife_slice.py`; do not edit it by hand.

## Source and licence
The EgoLife dataset ("EgoLife: Towards Egocentric Life Assistant", CVPR 2025; published by lmms-lab,
licence listed as MIT): the English dense captions, speech transcripts and EgoLifeQA questions of
participant A1_JAKE as stored in the GitHub repository Jake-Tian/WorldMM (`EgoLifeCap/Sync/`,
`EgoLifeQA/`), flattened into 30-second windows (`{WINDOWS_FILE}`, 6,223 windows over DAY1–DAY7) and
the development half of the questions (`{QUESTIONS_FILE}`, 250 questions). The full week is not in
this repository; pass its folder to `worldmm eval egolife --data DIR` (or set `EGOLIFE_DATA_DIR`).

## How it was cut
    python scripts/cut_egolife_slice.py --source DIR --day {day} --windows {len(windows)}
- windows: of the runs of {len(windows)} consecutive windows of {day} (by start time), the one that holds
  the evidence of the most questions (the earliest on a tie); every field kept except
  {", ".join(f"`{f}`" for f in DROPPED_FIELDS)} (the timed pieces `caption` and `transcript` already join);
- questions: every development question all of whose `targets` windows are among them, copied whole,
  whatever day it is asked (a question asked later sees all the slice's windows);
- source files (sha256): `{WINDOWS_FILE}` {_sha256(source / WINDOWS_FILE)},
  `{QUESTIONS_FILE}` {_sha256(source / QUESTIONS_FILE)}.

## What it holds
- {len(windows)} windows, {sum(1 for w in windows if not w["transcript"])} of them silent;
- {len(questions)} questions; asked on: {asked}; by type: {kinds};
- question ids: {ids}.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help=f"folder with {WINDOWS_FILE} and {QUESTIONS_FILE}")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "egolife")
    parser.add_argument("--day", default=DEFAULT_DAY)
    parser.add_argument("--windows", type=int, default=DEFAULT_WINDOWS)
    args = parser.parse_args(argv)
    missing = [name for name in (WINDOWS_FILE, QUESTIONS_FILE) if not (args.source / name).is_file()]
    if missing:
        print(f"{args.source} lacks {', '.join(missing)}", file=sys.stderr)
        return 2
    windows, questions = cut(args.source, args.day, args.windows)
    files = {
        WINDOWS_FILE: _jsonl(windows),
        QUESTIONS_FILE: _jsonl(questions),
        "README.md": _readme(args.source, args.day, windows, questions),
    }
    size = sum(len(text.encode("utf-8")) for text in files.values())
    if size > MAX_BYTES:
        print(f"the slice would take {size} bytes, more than {MAX_BYTES}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8")
    print(json.dumps({"windows": len(windows), "questions": len(questions), "bytes": size, "out": str(args.out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
