"""Answers on the sample session, with the real local models: how many are right, how long each takes.

Ingests `examples/sample-session` once into a fresh local home (its own embedded PostgreSQL), then asks each
question file through the chat-verbose handler twice (`VARIANTS`): with the local reader, whose model writes a
short answer checked against the sentence it rests on; and without it (the composer's quoted sentence, the
baseline).

    python -m bench.bench_answers [--files questions.jsonl questions-dev.jsonl] [--variants reader] [--out FILE]
                                  [--heard script] [--session evening|next-morning]

`--session evening` asks the question files of `examples/evening-session` (the same day's evening, its own
people, places and facts) over a memory that holds the morning's recording too, ingested first;
`--session next-morning` those of `examples/next-morning-session` (the next day) over all three recordings.

`questions-heldout*.jsonl` are held-out sets, each written before the changes it measures: run a new one once,
at the end, and report it; never tune on it.
Prints one JSON object (and writes it with --out): per file and variant, right / asked, refusals right, the
share written by the reader, median and slowest seconds per answer, the answers over 5 s, and every wrong
answer. Answerable
questions are also split by whether every fact they ask for was heard at all (is in the stored transcript of
the session's 30-second windows): a fact the recogniser misheard cannot be answered by choosing better, so
"right of heard" measures the answer path apart from speech recognition. `--heard script` goes further: the
memory is built from the script itself (`ScriptTranscriber`, every word heard and in its window), so every
wrong answer is the answer path's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import shutil
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DEFAULT_FILES = ("questions.jsonl", "questions-dev.jsonl")
VARIANTS = (("reader", True), ("composer", False))
"""The answer path as shipped (the reader's model writes from the composer's best sentence), and the composer
alone (the baseline)."""


def _score(answers: list[Any], heard: str) -> dict[str, Any]:
    seconds = [a.elapsed_s for a in answers]
    refusals = [a for a in answers if a.expected.refusal]
    answerable_heard = [a for a in answers if not a.expected.refusal and a.expected.is_right(heard)]
    return {
        "right": sum(bool(a.right) for a in answers),
        "asked": len(answers),
        "refusals_right": sum(bool(a.right) for a in refusals),
        "refusals_asked": len(refusals),
        "heard": len(answerable_heard),
        "right_of_heard": sum(bool(a.right) for a in answerable_heard),
        "false_refusals": sum(1 for a in answers if not a.expected.refusal and a.answer == "I don't remember that."),
        "written_by_reader": sum(1 for a in answers if "local reader" in (a.trace.get("answer_note") or "")),
        "wrong_but_written": sum(
            1 for a in answers if not a.right and "local reader" in (a.trace.get("answer_note") or "")
        ),
        "unheard": sum(1 for a in answers if "no memory mentions" in (a.trace.get("answer_note") or "")),
        "median_s": round(statistics.median(seconds), 2),
        "slowest_s": round(max(seconds), 2),
        "over_5_s": [
            {"id": a.expected.id, "seconds": round(a.elapsed_s, 2), "note": a.trace.get("answer_note")}
            for a in answers
            if a.elapsed_s > 5.0
        ],
        "wrong": [{"id": a.expected.id, "question": a.question, "answer": a.answer} for a in answers if not a.right],
    }


def _heard(settings: Any, user_id: str) -> str:
    """Everything the recogniser wrote for the user's 30-second windows, in order."""
    from sqlalchemy import select

    from worldmm.db.models import Segment
    from worldmm.services import Services

    query = (
        select(Segment.transcript)
        .where(Segment.user_id == user_id, Segment.duration_seconds == 30)
        .order_by(Segment.start_time)
    )
    with Services(settings).db.unit_of_work(user_id) as session:
        return " ".join(text for text in session.scalars(query) if text)


@contextlib.contextmanager
def fresh_local_home(prefix: str = "worldmm-bench-answers-") -> Iterator[tuple[Path, Any]]:
    """A new local home with its own embedded PostgreSQL (`worldmm.db.local`), removed on exit."""
    from worldmm.db.local import start_local_database

    home = Path(tempfile.mkdtemp(prefix=prefix))
    home.chmod(0o755)  # the embedded server runs as its own user
    local = start_local_database(home / "pgdata")
    try:
        yield home, local
    finally:
        local.server.cleanup()
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="*", default=list(DEFAULT_FILES))
    parser.add_argument("--variants", nargs="*", choices=[v[0] for v in VARIANTS], default=[v[0] for v in VARIANTS])
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--heard",
        choices=["recogniser", "script", "script-speakers"],
        default="recogniser",
        help="build the memory from the recording (the settings' recogniser), or from the script, every word heard "
        "(script-speakers: each line with its speaker as the script names it)",
    )
    parser.add_argument(
        "--session",
        choices=["sample", "evening", "next-morning"],
        default="sample",
        help="whose question files: the morning's (sample-session), the evening's or the next morning's, over the"
        " recordings up to it",
    )
    args = parser.parse_args()
    # A benchmark asks a hundred questions in minutes as one user: no allowance of model calls (a rate limit, not an
    # answer method), as bench_fresh_days.
    os.environ.setdefault("CHAT_ALLOWANCE_MODEL_CALLS", "0")

    from worldmm.demo import DEMO_USER, RECORDINGS, load_questions, local_profile, run_demo
    from worldmm.eval.speech import ScriptTranscriber

    report: dict[str, Any] = {
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "heard": args.heard,
        "session": args.session,
    }
    names = [recording.name.removesuffix("-session") for recording in RECORDINGS]
    recordings = list(RECORDINGS[: names.index(args.session) + 1])
    asked = recordings[-1]

    def transcriber(recording: Path) -> ScriptTranscriber | None:
        speakers = args.heard == "script-speakers"
        return ScriptTranscriber(recording, speakers=speakers) if args.heard.startswith("script") else None

    with fresh_local_home() as (home, local):
        for variant, reader in (v for v in VARIANTS if v[0] in args.variants):
            settings = local_profile(home, local, answer_reader=reader)
            with contextlib.redirect_stdout(io.StringIO()):
                for earlier in recordings[:-1]:  # ingested (once: resumable), nothing asked
                    run_demo(settings, earlier, questions=[], transcriber=transcriber(earlier))
            for name in args.files:
                with contextlib.redirect_stdout(io.StringIO()):
                    answers = run_demo(
                        settings, asked, questions=load_questions(asked, name), transcriber=transcriber(asked)
                    )
                report.setdefault(name, {})[variant] = _score(answers, _heard(settings, DEMO_USER))
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
