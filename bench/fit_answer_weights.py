"""Fit the answer path's weights (`worldmm/retrieval/answer_weights.json`) on development questions.

Ingests the recordings (as `bench.bench_answers` does), gathers for each development question what the fixed
plan answers from, and scores every candidate sentence (`compose.features`); a sentence is a positive when it
states every fact its question expects. Then, by logistic regression (L2), the feature weights on every
candidate; the refusal threshold that best parts the unanswerable questions from the answerable ones whose best
sentence answers; and the rarity (`asks.rarity`) from which a thing the question names that no memory says is
refused: the one that refuses most unanswerable questions less the answerable ones whose best sentence answers.

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


def _unheard_threshold(rows: list[dict[str, Any]], first: list[np.ndarray], labels: list[np.ndarray]) -> float:
    """The rarity from which an unheard thing refuses: most unanswerable questions refused less answerable ones
    whose best sentence answers (the larger on a tie: it refuses less)."""

    def gain(cut: float) -> int:
        return sum((1 if r["refusal"] else -int(bool(len(y)) and bool(y[int(sc.argmax())]))) * (r["unheard"] >= cut)
                   for r, sc, y in zip(rows, first, labels, strict=True))  # fmt: skip

    cuts = sorted({r["unheard"] for r in rows if r["unheard"] > 0}, reverse=True)
    return max(cuts, key=gain, default=float("inf"))


def gather(files: list[str], home: Path | None = None) -> list[dict[str, Any]]:
    """Per question: its candidates' features and labels, and the rarity of the rarest thing it names unheard."""
    from worldmm.db.local import start_local_database
    from worldmm.demo import DEMO_USER, RECORDINGS, load_questions, local_profile, run_demo
    from worldmm.retrieval import agent, compose
    from worldmm.retrieval.asks import analyse, rarity
    from worldmm.retrieval.hybrid import adjacent_windows
    from worldmm.retrieval.lexical import said_stems
    from worldmm.retrieval.models import Trace
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
        asked_at = datetime.now(UTC)
        with services.db.unit_of_work(DEMO_USER) as session:
            said = said_stems(session, DEMO_USER)
        for name in files:
            for q in load_questions((EXAMPLES / name).parent, (EXAMPLES / name).name):
                context = agent._Context(settings.memory_text_max_chars)  # the fixed plan's searches, as it makes them
                now = agent._read_at(agent.newest_memory_end(services, DEMO_USER, asked_at), asked_at)
                retrievers = agent.default_retrievers()
                agent._plan_searches(services, retrievers, DEMO_USER, q.question, now, context, Trace(mode="plan"))
                found = list(context.memories.values())
                memories = [*found, *adjacent_windows(services, DEMO_USER, found)]
                scored = compose.score(services, q.question, memories)
                unheard = [rarity(text) or 0.0 for text, stem, _ in analyse(q.question).things if stem not in said]
                rows.append(
                    {
                        "id": q.id,
                        "refusal": q.refusal,
                        "features": scored.features.tolist(),
                        "labels": [bool(q.facts) and q.is_right(c.quote) for c in scored.candidates],
                        "unheard": max(unheard, default=0.0),
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
    tops = [(float(sc.max()), r["refusal"], bool(y[int(sc.argmax())]))
            for r, sc, y in zip(rows, first, labels, strict=True) if len(sc)]  # fmt: skip
    weights["refuse_below"], refused = _threshold(tops)
    weights["refuse_unheard_rarity"] = _unheard_threshold(rows, first, labels)
    weights["_fitted_on"] = {
        "questions": len(rows), "sentences": int(sum(len(y) for y in labels)),
        "positives": int(sum(y.sum() for y in labels)), "unanswerable_refused": round(refused, 3),
        "first_answers": round(float(np.mean([a for _, r, a in tops if not r])), 3),
    }  # fmt: skip
    return weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="*", default=list(DEFAULT_FILES))
    parser.add_argument("--rows", type=Path, help="read gathered rows from this file instead (or write them to it)")
    parser.add_argument("--home", type=Path, help="keep the ingested memory here (a second run skips the ingest)")
    parser.add_argument("--write", action="store_true", help=f"write the weights to {WEIGHTS}")
    args = parser.parse_args()
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text())
    else:
        rows = gather(args.files, args.home)
        if args.rows:
            args.rows.write_text(json.dumps(rows))
    weights = fit(rows)
    text = json.dumps(weights, indent=2)
    print(text)
    if args.write:
        WEIGHTS.write_text(text + "\n")


if __name__ == "__main__":
    main()
