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


def _listwise(groups: list[tuple[np.ndarray, np.ndarray]], l2: float = 1e-3) -> np.ndarray:
    """Weights that make each question's answering sentences likeliest under a softmax over its candidates
    (a conditional logit: the first-ranked sentence is what an answer quotes), L2-penalised."""
    groups = [(x, y) for x, y in groups if y.any() and not y.all()]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = l2 * float(w @ w), 2 * l2 * w
        for x, y in groups:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            q = np.where(y, p, 0.0)
            q /= q.sum()
            value -= float(np.log(np.exp(s[y] - s.max()).sum()) - np.log(np.exp(s - s.max()).sum()))
            grad += x.T @ (p - q)
        return value / len(groups), grad / len(groups)

    return np.asarray(minimize(loss, np.zeros(groups[0][0].shape[1]), jac=True, method="L-BFGS-B").x)


FALSE_REFUSALS = 0.05
"""The most answerable questions the refusal threshold may refuse (the answers issue's bound)."""


def _threshold(tops: list[tuple[float, bool, bool]]) -> tuple[float, float]:
    """The highest threshold that refuses at most `FALSE_REFUSALS` of the answerable questions, from their best
    sentence's score (top score, refusal expected, top sentence answers); and the share of unanswerable ones it
    refuses."""
    answerable = sorted(t for t, refusal, _ in tops if not refusal)
    cut = answerable[int(FALSE_REFUSALS * len(answerable))] if answerable else 0.0
    unanswerable = [t for t, refusal, _ in tops if refusal]
    return cut, sum(t < cut for t in unanswerable) / max(1, len(unanswerable))


def gather(files: list[str], judged: int, judge_questions: int, home: Path | None = None) -> list[dict[str, Any]]:
    """Per question: its candidates' features, labels, first scores and (for some) the judge's log-odds."""
    from functools import partial

    from worldmm.db.local import start_local_database
    from worldmm.demo import DEMO_USER, RECORDINGS, load_questions, local_profile, run_demo
    from worldmm.retrieval import agent, compose
    from worldmm.retrieval.hybrid import adjacent_windows
    from worldmm.retrieval.models import Trace
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
        judged_kind = {True: 0, False: 0}  # as many unanswerable questions judged as answerable ones
        for name in files:
            for q in load_questions((EXAMPLES / name).parent, (EXAMPLES / name).name):
                context = agent._Context(settings.memory_text_max_chars)  # the fixed plan's searches, as it makes them
                now = agent._read_at(agent.newest_memory_end(services, DEMO_USER, asked_at), asked_at)
                retrievers = agent.default_retrievers()
                agent._plan_searches(services, retrievers, DEMO_USER, q.question, now, context, Trace(mode="plan"))
                found = list(context.memories.values())
                memories = [*found, *adjacent_windows(services, DEMO_USER, found)]
                scored = compose.score(services, q.question, memories)
                top = scored.candidates[:judged]
                judging = judged_kind[q.refusal] < judge_questions // 2
                judged_kind[q.refusal] += judging
                odds = judges(q.question, top) if judging else [None] * len(top)
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

    matrices = [np.asarray(r["features"]).reshape(-1, len(FEATURES)) for r in rows]
    labels = [np.asarray(r["labels"], dtype=bool) for r in rows]
    w = _listwise(list(zip(matrices, labels, strict=True)))
    first = [x @ w for x in matrices]
    weights: dict[str, Any] = {"features": dict(zip(FEATURES, map(float, w), strict=True)), "bias": 0.0}
    judged = [
        (sc[: len(r["log_odds"])], np.asarray([np.nan if lo is None else lo for lo in r["log_odds"]]), y, r["refusal"])
        for r, sc, y in zip(rows, first, labels, strict=True)
        if r["log_odds"] and r["log_odds"][0] is not None
    ]
    judge = _listwise([(np.stack([s, lo], axis=1), y[: len(s)]) for s, lo, y, _ in judged if not np.isnan(lo).any()])
    weights["judge"], weights["judge_centre"] = float(judge[1] / judge[0]), 0.0
    unjudged_tops = [(float(sc.max()), r["refusal"], bool(y[int(sc.argmax())]))
                     for r, sc, y in zip(rows, first, labels, strict=True) if len(sc)]  # fmt: skip
    judged_tops = []
    for s, lo, y, refusal in judged:  # the judge's surest log-odds decides whether anything answers
        final = s + weights["judge"] * np.nan_to_num(lo, nan=0.0)
        judged_tops.append((float(np.nanmax(lo)), refusal, bool(y[int(final.argmax())])))
    weights["refuse_below_unjudged"], refused_unjudged = _threshold(unjudged_tops)
    weights["refuse_below_judged"], refused_judged = _threshold(judged_tops)
    weights["_fitted_on"] = {
        "questions": len(rows), "sentences": int(sum(len(y) for y in labels)),
        "positives": int(sum(y.sum() for y in labels)), "judged_questions": len(judged_tops),
        "unanswerable_refused_unjudged": round(refused_unjudged, 3),
        "first_answers": round(float(np.mean([a for _, r, a in unjudged_tops if not r])), 3),
        "unanswerable_refused_judged": round(refused_judged, 3),
        "first_answers_judged": round(float(np.mean([a for _, r, a in judged_tops if not r])), 3),
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
