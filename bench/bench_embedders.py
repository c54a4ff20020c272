"""Which local text embedder finds EgoLife's evidence windows: each alone, and fused with BM25 as hybrid search
fuses them, beside plain BM25, on the halves of the development questions.

Every window of the week is embedded as memory keeps it (`segment_memory_text`) by each model named; a question
sees only the windows that end by the time it is asked. Per model: cosine alone, and BM25 and cosine fused by
`score_fuse` over each leg's best `hybrid_pool` (weights `fusion_weight_lexical`, `fusion_weight_dense`). BM25 is
the eval's plain baseline (no stemming, no graph, no time reference), so the fused rows compare embedders, not
the shipped hybrid search: `worldmm eval egolife` measures that. Exact-window R@1 / R@10 on the tuning half
(`sha256(id) mod 2 == 0`), the other half, and all, as in docs/answers.md.

    python -m bench.bench_embedders --data <egolife dir> [--model NAME=DIR ...] [--dims 512 256] [--prompts]
                                    [--days DAY1 DAY2] [--out FILE]

Without `--model`, the packaged all-MiniLM-L6-v2 alone. `--dims`: each model's vectors also cut to these first
dimensions and renormalised (what `EMBEDDING_DIM` below a model's own does: the Matryoshka way), rows `NAME@DIM`.
`--prompts`: questions and windows embedded with the model's own `query` and `document` prompts where it declares
them (EmbeddingGemma does; the shipped embedder uses none). Embedding the week (6,223 windows) takes minutes per
model on 2 cores (MiniLM ~3, all-mpnet-base-v2 ~25; EmbeddingGemma-300M ~1 window a second: ~1.7 h).
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.report import machine, write_result

KS = (1, 10)


def half(question_id: str) -> int:
    """The development half a question is in: 0 (tuned on) or 1 (held out), by `sha256(id) mod 2`."""
    return int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 2


def fused_ranking(
    lexical: np.ndarray, dense: np.ndarray, visible: np.ndarray, pool: int, weights: Sequence[float]
) -> list[int]:
    """BM25 and cosine fused as hybrid search fuses them: each leg's best `pool` visible (BM25's with a word of
    the question), a window a leg did not return scored BM25 0 or the lowest cosine returned."""
    from worldmm.eval.baselines import top
    from worldmm.retrieval.hybrid import ScoredLeg, score_fuse

    lexical_top = top(lexical, visible, pool, positive_only=True)
    dense_top = top(dense, visible, pool)
    legs = [
        ScoredLeg(lexical_top, [float(lexical[i]) for i in lexical_top], 0.0),
        ScoredLeg(dense_top, [float(dense[i]) for i in dense_top], float(dense[dense_top[-1]]) if dense_top else 0.0),
    ]
    fused = score_fuse(legs, weights)
    return sorted(fused, key=lambda i: -fused[i])


def recall(hits: Sequence[tuple[int, list[int], set[int]]]) -> dict[str, Any]:
    """Exact-window R@k over (half, ranking, evidence) rows: tuning half, held-out half, all."""
    out: dict[str, Any] = {}
    for name, rows in (
        ("tuning", [h for h in hits if h[0] == 0]),
        ("held_out", [h for h in hits if h[0] == 1]),
        ("all", list(hits)),
    ):
        out[name] = {
            "questions": len(rows),
            **{f"r@{k}": round(sum(bool(set(r[:k]) & e) for _, r, e in rows) / max(1, len(rows)), 3) for k in KS},
        }
    return out


def cut(vectors: np.ndarray, dim: int) -> np.ndarray:
    """Each vector's first `dim` dimensions, renormalised to unit length."""
    head = vectors[:, :dim]
    norms = np.linalg.norm(head, axis=1, keepdims=True)
    return head / np.where(norms == 0, 1.0, norms)


def embedded(embedder: Any, texts: list[str], prompt_name: str | None) -> np.ndarray:
    """`texts` embedded as unit vectors, with the model's prompt of that name when it declares one."""
    if prompt_name is None:
        return np.array(embedder.embed(texts), dtype=np.float32)
    model = embedder._load()
    prompt = prompt_name if prompt_name in (model.prompts or {}) else None
    vectors = model.encode(
        texts, prompt_name=prompt, batch_size=embedder.batch_size, normalize_embeddings=True, convert_to_numpy=True
    )
    return np.asarray(vectors, dtype=np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="the EgoLife folder (windows and questions)")
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a sentence-transformers folder to measure (repeat); default: the packaged MiniLM",
    )
    parser.add_argument("--dims", nargs="*", type=int, default=[], help="also measure vectors cut to these sizes")
    parser.add_argument("--prompts", action="store_true", help="the models' own query and document prompts")
    parser.add_argument("--days", nargs="*", default=None, help="only these days' windows and questions")
    parser.add_argument("--out", default="bench/results/bench_embedders.json")
    args = parser.parse_args()

    from worldmm.config import Settings
    from worldmm.eval.baselines import PlainBM25, top
    from worldmm.eval.datasets import load_egolife
    from worldmm.memory.embedding.providers import MiniLMEmbedder, declared_dimension, default_minilm_path
    from worldmm.memory.episodic.segment_text import segment_memory_text

    settings = Settings()
    models = dict(m.split("=", 1) for m in args.model) or {"all-MiniLM-L6-v2": str(default_minilm_path())}
    benchmark = load_egolife(args.data, days=set(args.days) if args.days else None)
    texts = [segment_memory_text(w.caption, w.transcript) for w in benchmark.windows]
    ends = np.array([w.end_time.timestamp() for w in benchmark.windows])
    position = {w.window_id: i for i, w in enumerate(benchmark.windows)}
    questions = benchmark.questions
    visible = [ends <= q.asked_at.timestamp() for q in questions]
    evidence = [{position[e] for e in q.evidence} for q in questions]
    halves = [half(q.question_id) for q in questions]
    bm25 = PlainBM25(texts)
    lexical = [bm25.scores(q.question, v) for q, v in zip(questions, visible, strict=True)]
    weights = (settings.fusion_weight_lexical, settings.fusion_weight_dense)

    rows: dict[str, Any] = {
        "bm25": recall(
            [
                (h, top(s, v, 10, positive_only=True), e)
                for h, s, v, e in zip(halves, lexical, visible, evidence, strict=True)
            ]
        )
    }
    seconds: dict[str, float] = {}
    for name, folder in models.items():
        embedder = MiniLMEmbedder(
            Path(folder),
            expected_dim=declared_dimension(Path(folder)) or 384,
            batch_size=settings.local_embedding_batch_size,
        )
        started = time.perf_counter()
        windows = embedded(embedder, texts, "document" if args.prompts else None)
        seconds[name] = round(time.perf_counter() - started, 1)
        asked = embedded(embedder, [q.question for q in questions], "query" if args.prompts else None)
        for dim in [windows.shape[1], *(d for d in args.dims if d < windows.shape[1])]:
            label = name if dim == windows.shape[1] else f"{name}@{dim}"
            kept = cut(windows, dim)
            dense = [kept @ a for a in cut(asked, dim)]
            rows[label] = recall(
                [(h, top(d, v, 10), e) for h, d, v, e in zip(halves, dense, visible, evidence, strict=True)]
            )
            rows[f"bm25+{label}"] = recall(
                [
                    (h, fused_ranking(s, d, v, settings.hybrid_pool, weights)[:10], e)
                    for h, s, d, v, e in zip(halves, lexical, dense, visible, evidence, strict=True)
                ]
            )
    write_result(
        {
            "machine": machine(),
            "windows": len(texts),
            "questions": len(questions),
            "embed_windows_s": seconds,
            "prompts": args.prompts,
            "days": args.days or "all",
            "fusion_weights": list(weights),
            "pool": settings.hybrid_pool,
            "recall": rows,
        },
        Path(args.out),
    )


if __name__ == "__main__":
    main()
