"""How well the local reader's model judges whether a sentence answers a question, on the sample recordings.

Ingests the three recordings (`worldmm.demo.RECORDINGS`) in order into a fresh local home, then asks a fixed
sample of each one's questions (every question file beside it; seed 59) through the answer path with the
reader on and no deadline, so every sentence the reranker would judge is judged (`Trace.judged`). Each judged
sentence is labelled by its question's facts (`SampleQuestion.is_right`; none answers an unanswerable question).

Reports, beside the constants the reader uses (`RERANK_MARGIN`, `DOES_NOT_ANSWER`):
- how well the log-odds tell the sentences that answer from those that do not: AUC over all judged sentences,
  and within one question (the order the reranker acts on);
- for each refusal threshold, the questions all of whose judged sentences fall below it: answerable ones a
  judged sentence answers (wrong refusals) and unanswerable ones (right refusals);
- for each reorder margin, the questions whose surest sentence leads the composer's first by it: made right
  (the first did not answer, the surest does) and made wrong (the other way).

    python -m bench.bench_judge [--per-recording 40] [--out FILE]

All the sample's questions have been seen while tuning: this calibrates the judge, it is no held-out score.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import machine, write_result

SEED = 59
THRESHOLDS = (-3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0)
MARGINS = (0.5, 1.0, 1.5, 2.0, 3.0)


@dataclass(frozen=True)
class Judged:
    """One question's judged sentences, in the order judged (the composer's first is first)."""

    question_id: str
    refusal: bool
    log_odds: list[float]
    answers: list[bool]


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """The chance that a sentence that answers scores above one that does not (ties count half)."""
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return round(wins / (len(positives) * len(negatives)), 4)


def summarise(judged: Sequence[Judged]) -> dict[str, Any]:
    """AUC overall and within a question, refusals by threshold, reorders by margin."""
    scores = [(odds, answers) for j in judged for odds, answers in zip(j.log_odds, j.answers, strict=True)]
    within = [
        (p > n) + 0.5 * (p == n)
        for j in judged
        for p, a in zip(j.log_odds, j.answers, strict=True)
        if a
        for n, b in zip(j.log_odds, j.answers, strict=True)
        if not b
    ]
    refusals = {
        str(t): {
            "answerable_refused": sum(1 for j in judged if any(j.answers) and max(j.log_odds) < t),
            "unanswerable_refused": sum(1 for j in judged if j.refusal and max(j.log_odds) < t),
        }
        for t in THRESHOLDS
    }
    reorders = {}
    for margin in MARGINS:
        made_right = made_wrong = 0
        for j in (j for j in judged if len(j.log_odds) > 1):
            best = max(range(len(j.log_odds)), key=lambda i: (j.log_odds[i], -i))
            if j.log_odds[best] - j.log_odds[0] >= margin:
                made_right += (not j.answers[0]) and j.answers[best]
                made_wrong += j.answers[0] and not j.answers[best]
        reorders[str(margin)] = {"made_right": made_right, "made_wrong": made_wrong}
    return {
        "questions": len(judged),
        "unanswerable": sum(j.refusal for j in judged),
        "answerable_with_a_judged_answer": sum(any(j.answers) for j in judged),
        "sentences": len(scores),
        "auc": auc([o for o, a in scores if a], [o for o, a in scores if not a]),
        "auc_within_a_question": round(sum(within) / len(within), 4) if within else None,
        "refusal_below": refusals,
        "reorder_margin": reorders,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-recording", type=int, default=40, help="questions asked of each recording")
    parser.add_argument("--out", default="bench/results/bench_judge.json")
    args = parser.parse_args()

    from worldmm.db.local import start_local_database
    from worldmm.demo import RECORDINGS, load_questions, local_profile, run_demo
    from worldmm.retrieval.reader import DOES_NOT_ANSWER, RERANK_MARGIN

    rng = random.Random(SEED)
    home = Path(tempfile.mkdtemp(prefix="worldmm-bench-judge-"))
    home.chmod(0o755)  # the embedded server runs as its own user
    local = start_local_database(home / "pgdata")
    judged: list[Judged] = []
    try:
        settings = local_profile(home, local, answer_budget_s=1e6)
        for recording in RECORDINGS:
            files = sorted(p.name for p in recording.glob("questions*.jsonl"))
            questions = [q for name in files for q in load_questions(recording, name)]
            asked = rng.sample(questions, min(args.per_recording, len(questions)))
            with contextlib.redirect_stdout(io.StringIO()):
                answers = run_demo(settings, recording, questions=asked)
            for answer in answers:
                rows = answer.trace.get("judged") or []
                if rows:
                    expected = answer.expected
                    judged.append(
                        Judged(
                            question_id=f"{recording.name}/{expected.id}",
                            refusal=expected.refusal,
                            log_odds=[row["log_odds"] for row in rows],
                            answers=[not expected.refusal and expected.is_right(row["sentence"]) for row in rows],
                        )
                    )
    finally:
        local.server.cleanup()
        shutil.rmtree(home, ignore_errors=True)
    result = {
        "machine": machine(),
        "per_recording": args.per_recording,
        "seed": SEED,
        "reader": {"rerank_margin": RERANK_MARGIN, "does_not_answer": DOES_NOT_ANSWER},
        **summarise(judged),
    }
    write_result(result, Path(args.out))


if __name__ == "__main__":
    main()
