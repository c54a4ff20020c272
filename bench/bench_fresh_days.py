"""Answers on generated days (`python -m bench.worldgen`): right of asked per kind, refusals, seconds per answer.

Ingests every day of DIR (`DIR/day-1`, `DIR/day-2`, ... in order) into one fresh local home with its own embedded
PostgreSQL, then asks each day's `questions.jsonl` through the chat-verbose handler, as the demo does.

    python -m bench.bench_fresh_days DIR [--out FILE] [--env KEY=VALUE ...] [--heard recogniser|script]
                                         [--code-tree PATH]

`--env` sets a setting for the run (repeatable, e.g. `--env ANSWER_READER=false`): the answer method is what the
settings choose; this command chooses none. `--code-tree PATH` runs the same evaluation with the `worldmm` and
`handlers` packages of another checkout (e.g. a `git worktree` at an older commit): a subprocess whose import path
holds PATH and this checkout's `bench` only; it prints `worldmm.__file__` and stops if that is not under PATH.
`--heard script` builds the memory from each day's script (every word heard), so what is wrong is the answer
path's. Prints one JSON object (and writes it with --out): right/asked overall and per kind, unanswerable refused,
answerable refused, p50/p95 seconds per answer, every wrong answer with the expected one.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.bench_answers import _heard, _score, fresh_local_home
from bench.report import write_result

BENCH_ROOT = Path(__file__).resolve().parent


def days_of(root: Path) -> list[Path]:
    """The day directories under `root` in day order (`day-1`, `day-2`, ..., `day-10`)."""
    days = [p for p in root.iterdir() if p.is_dir() and p.name.startswith("day-") and (p / "metadata.json").is_file()]
    return sorted(days, key=lambda p: int(p.name.removeprefix("day-")))


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of `values` (share in 0..1)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1))]


def summarise(answers: list[Any], heard: str) -> dict[str, Any]:
    """bench_answers' score of the answers, with per-kind counts, p50/p95 and the expected answer of each wrong one."""
    report = _score(answers, heard)
    seconds = [a.elapsed_s for a in answers]
    kinds: dict[str, dict[str, int]] = defaultdict(lambda: {"right": 0, "asked": 0})
    for a in answers:
        kinds[a.expected.kind]["asked"] += 1
        kinds[a.expected.kind]["right"] += bool(a.right)
    answerable = [a for a in answers if not a.expected.refusal]
    report.update(
        {
            "share_right": round(report["right"] / max(1, report["asked"]), 3),
            "answerable": len(answerable),
            "false_refusal_share": round(report["false_refusals"] / max(1, len(answerable)), 3),
            "refusal_share": round(report["refusals_right"] / max(1, report["refusals_asked"]), 3),
            "p50_s": round(statistics.median(seconds), 2),
            "p95_s": round(percentile(seconds, 0.95), 2),
            "per_kind": dict(sorted(kinds.items())),
            "wrong": [
                {
                    "id": a.expected.id,
                    "kind": a.expected.kind,
                    "question": a.question,
                    "answer": a.answer,
                    "expected": a.expected.answer,
                    "facts": list(a.expected.facts),
                    "note": a.trace.get("answer_note"),
                }
                for a in answers
                if not a.right
            ],
        }
    )
    return report


def evaluate(root: Path, heard: str, expect_tree: Path | None, heard_out: Path | None = None) -> dict[str, Any]:
    """Ingest every day of `root` into one fresh memory, ask every day's questions, score them (`heard_out`: a file
    for everything the windows' transcripts say, in order)."""
    import handlers
    import worldmm

    imported = Path(worldmm.__file__).resolve()
    handler_root = Path(handlers.__file__).resolve()
    print(f"worldmm imported from {imported}, handlers from {handler_root}", file=sys.stderr, flush=True)
    for module in (imported, handler_root):
        if expect_tree is not None and not module.is_relative_to(expect_tree.resolve()):
            raise SystemExit(f"{module} is not in the code tree {expect_tree}")
    from worldmm.demo import DEMO_USER, load_questions, local_profile, run_demo
    from worldmm.eval.speech import ScriptTranscriber

    days = days_of(root)
    if not days:
        raise SystemExit(f"no day-N recordings under {root}")
    report: dict[str, Any] = {
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "worldmm": commit_of(imported.parent),
        "heard": heard,
        "days": [],
    }
    answers: list[Any] = []
    with fresh_local_home("worldmm-bench-fresh-days-") as (home, local):
        settings = local_profile(home, local)
        for day in days:
            started = time.perf_counter()
            transcriber = ScriptTranscriber(day) if heard == "script" else None
            with contextlib.redirect_stdout(io.StringIO()):
                run_demo(settings, day, questions=[], transcriber=transcriber)
            report["days"].append({"day": day.name, "ingest_s": round(time.perf_counter() - started, 1)})
            print(f"ingested {day.name} in {report['days'][-1]['ingest_s']} s", file=sys.stderr, flush=True)
        for day, entry in zip(days, report["days"], strict=True):
            started = time.perf_counter()
            transcriber = ScriptTranscriber(day) if heard == "script" else None
            with contextlib.redirect_stdout(io.StringIO()):
                asked = run_demo(settings, day, questions=load_questions(day), transcriber=transcriber)
            entry["ask_s"] = round(time.perf_counter() - started, 1)
            entry["right"] = sum(bool(a.right) for a in asked)
            entry["asked"] = len(asked)
            print(f"asked {day.name}: {entry['right']}/{entry['asked']}", file=sys.stderr, flush=True)
            answers += asked
        heard_text = _heard(settings, DEMO_USER)
    if heard_out is not None:
        heard_out.write_text(heard_text)
    report.update(summarise(answers, heard_text))
    return report


def in_code_tree(args: argparse.Namespace) -> dict[str, Any]:
    """The same evaluation in a subprocess importing `worldmm` (and `handlers`) from `args.code_tree`."""
    tree = Path(args.code_tree).resolve()
    if not (tree / "worldmm" / "__init__.py").is_file():
        raise SystemExit(f"{tree} holds no worldmm package")
    with tempfile.TemporaryDirectory(prefix="fresh-days-") as tmp:
        # The subprocess starts in a folder that holds only this checkout's `bench`: the working directory comes
        # first on its import path, then PYTHONPATH (the other tree), so no other worldmm can shadow the tree's.
        (Path(tmp) / "bench").symlink_to(BENCH_ROOT)
        out = Path(tmp) / "report.json"
        command = [
            sys.executable,
            "-m",
            "bench.bench_fresh_days",
            str(Path(args.dir).resolve()),
            "--out",
            str(out),
            "--heard",
            args.heard,
            "--expect-tree",
            str(tree),
        ]
        for item in args.env:
            command += ["--env", item]
        env = dict(os.environ, PYTHONPATH=str(tree))
        done = subprocess.run(command, cwd=tmp, env=env, check=False)
        if done.returncode:
            raise SystemExit(f"the evaluation with {tree}'s worldmm failed (exit {done.returncode})")
        report: dict[str, Any] = json.loads(out.read_text())
    report["code_tree"] = commit_of(tree)
    return report


def commit_of(folder: Path) -> str:
    """The commit `folder`'s checkout is at, with `+changes` when it has uncommitted ones: a report names the code
    it ran by commit, never by a path of the machine it ran on."""
    def git(*words: str) -> str:
        done = subprocess.run(["git", "-C", str(folder), *words], capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    if not commit:
        return "not a git checkout"
    return commit + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("dir", help="a folder of generated days (day-1, day-2, ...)")
    parser.add_argument("--code-tree", default=None, help="another checkout whose worldmm package answers")
    parser.add_argument("--out", default=None)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="a setting for this run")
    parser.add_argument("--heard", choices=["recogniser", "script"], default="recogniser")
    parser.add_argument("--heard-out", default=None, help="write every window's transcript, in order, to this file")
    parser.add_argument("--expect-tree", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    # A benchmark asks a hundred questions in minutes as one user: no allowance of model calls (a rate limit, not
    # an answer method; older trees without the setting ignore it). `--env` may set one.
    os.environ.setdefault("CHAT_ALLOWANCE_MODEL_CALLS", "0")
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--env needs KEY=VALUE, not {item!r}")
        os.environ[key] = value
    if args.code_tree:
        report = in_code_tree(args)
    else:
        expect = Path(args.expect_tree) if args.expect_tree else None
        heard_out = Path(args.heard_out) if args.heard_out else None
        report = evaluate(Path(args.dir).resolve(), args.heard, expect, heard_out)
    report["env"] = args.env
    if args.out:
        write_result(report, Path(args.out))
    else:
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
