"""Fit the answer path's weights (`worldmm/retrieval/answer_weights.json`) on development questions.

Ingests the recordings (as `bench.bench_answers` does), gathers for each development question what the fixed
plan answers from, and scores every candidate sentence (`compose.features`); a sentence is a positive when it
states every fact its question expects. The reader's model judges the best `--judged` of each of the first
`--judge-questions` questions. Then, by logistic regression (L2): the feature weights on every candidate; the
judge's weight on the judged ones, beside the first score; and the two refusal thresholds that best part the
unanswerable questions from the answerable ones whose best sentence answers.

    python -m bench.fit_answer_weights [--files sample-session/questions-dev.jsonl ...] [--write]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEFAULT_FILES = (
    "sample-session/questions-dev.jsonl",
    *(f"sample-session/questions-heldout-{n}.jsonl" for n in range(2, 14)),
    "world-dev/day-1/questions.jsonl",
    "world-dev/day-2/questions.jsonl",
)
"""Development questions: the sample morning's seen sets and the generated development days (`bench.worldgen`,
seed 1). The evening's and the next morning's sets are kept to check the fitted path against."""
WEIGHTS = Path(__file__).resolve().parent.parent / "worldmm" / "retrieval" / "answer_weights.json"


def _logistic(x: np.ndarray, y: np.ndarray, l2: float = 0.01) -> np.ndarray:
    """Weights (last: bias) maximising the L2-penalised log-likelihood of `y` given `x`."""
    xb = np.hstack([x, np.ones((len(x), 1))])

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = xb @ w
        p = 1 / (1 + np.exp(-z))
        eps = 1e-9
        value = -np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)) + l2 * np.sum(w[:-1] ** 2)
        grad = xb.T @ (p - y) / len(y) + np.concatenate([2 * l2 * w[:-1], [0.0]])
        return float(value), grad

    return np.asarray(minimize(loss, np.zeros(xb.shape[1]), jac=True, method="L-BFGS-B").x)


def _threshold(tops: list[tuple[float, bool, bool]]) -> tuple[float, float]:
    """The threshold that makes most questions right: (top score, refusal expected, top sentence answers)."""
    best = (-1.0, -99.0)
    for cut in [*sorted({t for t, _, _ in tops}), 99.0]:
        right = sum((t < cut) if refusal else (t >= cut and answers) for t, refusal, answers in tops)
        best = max(best, (right / len(tops), -cut))
    return -best[1], best[0]


def gather(files: list[str], judged: int, judge_questions: int, home: Path | None = None) -> list[dict[str, Any]]:
    """Per question: its candidates' features, labels, first scores and (for some) the judge's log-odds."""
    from functools import partial

    from worldmm.db.local import start_local_database
    from worldmm.demo import DEMO_USER, RECORDINGS, load_questions, local_profile, run_demo
    from worldmm.retrieval import compose
    from worldmm.retrieval.agent import plan_memories
    from worldmm.retrieval.reader import judge, load_model
    from worldmm.services import Services

    kept = home is not None
    home = home or Path(tempfile.mkdtemp(prefix="worldmm-fit-"))
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o755)
    local = start_local_database(home / "pgdata")
    rows: list[dict[str, Any]] = []
    try:
        settings = local_profile(home, local)
        recordings = list(RECORDINGS)
        recordings += [p for p in dict.fromkeys((EXAMPLES / name).parent for name in files) if p not in recordings]
        with contextlib.redirect_stdout(io.StringIO()):
            for recording in recordings:
                run_demo(settings, recording, questions=[])
        services = Services(settings)
        load_model(services)
        judges = partial(judge, services)
        asked_at = datetime.now(UTC)
        for name in files:
            for q in load_questions((EXAMPLES / name).parent, (EXAMPLES / name).name):
                memories = plan_memories(services, DEMO_USER, q.question, asked_at)
                scored = compose.score(services, q.question, memories)
                top = scored.candidates[:judged]
                odds = judges(q.question, top) if len(rows) < judge_questions else [None] * len(top)
                rows.append(
                    {
                        "id": q.id,
                        "refusal": q.refusal,
                        "features": scored.features.tolist(),
                        "labels": [bool(q.facts) and q.is_right(c.quote) for c in scored.candidates],
                        "log_odds": odds,
                    }
                )
    finally:
        local.server.cleanup()
        if not kept:
            shutil.rmtree(home, ignore_errors=True)
    return rows


def fit(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from worldmm.retrieval.compose import FEATURES

    x = np.asarray([f for r in rows for f in r["features"]])
    y = np.asarray([float(label) for r in rows for label in r["labels"]])
    w = _logistic(x, y)
    first = [np.asarray(r["features"]).reshape(-1, len(FEATURES)) @ w[:-1] + w[-1] for r in rows]
    judged = [(s, lo, lab) for r, sc in zip(rows, first, strict=True)
              for s, lo, lab in zip(sc, r["log_odds"], r["labels"], strict=False) if lo is not None]  # fmt: skip
    weights: dict[str, Any] = {"features": dict(zip(FEATURES, map(float, w[:-1]), strict=True)), "bias": float(w[-1])}
    a, b, c = _logistic(np.asarray([[s, lo] for s, lo, _ in judged]), np.asarray([float(lab) for *_, lab in judged]))
    weights["judge"], weights["judge_centre"] = float(b / a), float(-c / b) if b else 0.0
    unjudged_tops, judged_tops = [], []
    for r, sc in zip(rows, first, strict=True):
        if not len(sc):
            continue
        i = int(np.argmax(sc))
        unjudged_tops.append((float(sc[i]), r["refusal"], r["labels"][i]))
        odds = [*r["log_odds"], *[None] * (len(sc) - len(r["log_odds"]))]
        final = [s + (weights["judge"] * (lo - weights["judge_centre"]) if lo is not None else 0.0)
                 for s, lo in zip(sc, odds, strict=True)]  # fmt: skip
        if r["log_odds"] and r["log_odds"][0] is not None:
            j = int(np.argmax(final))
            judged_tops.append((float(final[j]), r["refusal"], r["labels"][j]))
    weights["refuse_below_unjudged"], right_unjudged = _threshold(unjudged_tops)
    weights["refuse_below"], right_judged = _threshold(judged_tops or unjudged_tops)
    weights["_fitted_on"] = {
        "questions": len(rows), "sentences": len(y), "positives": int(y.sum()), "judged_questions": len(judged_tops),
        "top_right_unjudged": round(right_unjudged, 3), "top_right_judged": round(right_judged, 3),
    }  # fmt: skip
    return weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="*", default=list(DEFAULT_FILES))
    parser.add_argument("--judged", type=int, default=6)
    parser.add_argument("--judge-questions", type=int, default=150)
    parser.add_argument("--rows", type=Path, help="read gathered rows from this file instead (or write them to it)")
    parser.add_argument("--home", type=Path, help="keep the ingested memory here (a second run skips the ingest)")
    parser.add_argument("--write", action="store_true", help=f"write the weights to {WEIGHTS}")
    args = parser.parse_args()
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text())
    else:
        rows = gather(args.files, args.judged, args.judge_questions, args.home)
        if args.rows:
            args.rows.write_text(json.dumps(rows))
    weights = fit(rows)
    text = json.dumps(weights, indent=2)
    print(text)
    if args.write:
        WEIGHTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
