"""Fusion, time tie-break and diversity of the hybrid search (spec 002 "Layer 6", relevance first)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from worldmm.retrieval.hybrid import (
    ScoredLeg,
    SegmentRow,
    drop_near_duplicates,
    rank_boost,
    rrf_fuse,
    score_fuse,
    similarity_matrix,
    time_order_bonus,
)
from worldmm.retrieval.timeref import TimeFocus

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 20, 8, 0, tzinfo=UTC)


def _row(text: str, minutes: int, embedding: list[float] | None = None) -> SegmentRow:
    start = T0 + timedelta(minutes=minutes)
    vector = np.array(embedding, dtype=np.float32) if embedding is not None else None
    return SegmentRow(uuid.uuid4(), text, start, start + timedelta(seconds=30), 30, vector)


def test_hybrid_rrf_sums_reciprocal_ranks_across_lists() -> None:
    # GIVEN an item at rank 1 in full text and rank 3 in vector search (the spec's example)
    scores = rrf_fuse([["a", "b"], ["c", "d", "a"]], k=60)
    # THEN its score is 1/61 + 1/63, and it beats items found by one list only
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["b"] == pytest.approx(1 / 62)
    assert max(scores, key=lambda item: scores[item]) == "a"


def test_hybrid_rrf_weights_scale_each_list() -> None:
    scores = rrf_fuse([["a"], ["b"]], k=60, weights=[1.0, 0.5])
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(0.5 / 61)


def test_hybrid_rrf_of_no_lists_is_empty() -> None:
    assert rrf_fuse([[], []], k=60) == {}


def test_score_fusion_keeps_a_leg_that_is_sure_of_its_best() -> None:
    # GIVEN BM25 far surer of "a" than of anything else, and a vector leg that barely prefers "b"
    lexical = ScoredLeg(["a", "b", "c", "d"], [9.0, 1.0, 0.9, 0.8], 0.0)
    dense = ScoredLeg(["b", "a", "c", "d"], [0.52, 0.51, 0.50, 0.49], 0.49)
    # THEN score fusion puts "a" first, where rank fusion ties it with "b"
    fused = score_fuse([lexical, dense], [1.0, 1.0])
    assert max(fused, key=lambda item: fused[item]) == "a"
    ranks = rrf_fuse([lexical.ranking, dense.ranking], k=60)
    assert ranks["a"] == pytest.approx(ranks["b"])


def test_score_fusion_counts_a_leg_s_unreturned_score() -> None:
    # GIVEN one BM25 match and two vector candidates that prefer the other memory a little
    fused = score_fuse(
        [ScoredLeg(["fern"], [2.0], 0.0), ScoredLeg(["basil", "fern"], [0.60, 0.58], 0.58)], [1.0, 1.0]
    )
    # THEN the match wins: basil's BM25 is 0, standardised over both candidates (fern +1, basil −1)
    assert fused["fern"] == pytest.approx(1.0 - 1.0)
    assert fused["basil"] == pytest.approx(-1.0 + 1.0)
    fused = score_fuse(
        [ScoredLeg(["fern"], [2.0], 0.0), ScoredLeg(["basil", "fern"], [0.60, 0.50], 0.50)], [1.0, 0.5]
    )
    assert fused["fern"] > fused["basil"]
    assert score_fuse([ScoredLeg([], [], 0.0), ScoredLeg(["x"], [0.5], 0.5)], [1.0, 1.0]) == {"x": 0.0}


def test_the_graph_boost_is_bounded_by_its_weight() -> None:
    boost = rank_boost(["g1", "g2"], k=60, ceiling=0.25)
    assert boost["g1"] == pytest.approx(0.25)
    assert boost["g2"] == pytest.approx(0.25 * 61 / 62)


def test_near_duplicates_of_a_better_candidate_are_dropped() -> None:
    order = ["dup1", "dup2", "other", "dup3"]
    similarity = np.array(
        [[1.0, 0.97, 0.2, 0.96], [0.97, 1.0, 0.2, 0.99], [0.2, 0.2, 1.0, 0.1], [0.96, 0.99, 0.1, 1.0]]
    )
    assert drop_near_duplicates(order, similarity, threshold=0.95, k=2) == ["dup1", "other"]
    # asked for more than the distinct ones: the duplicates follow, best first
    assert drop_near_duplicates(order, similarity, threshold=0.95, k=3) == ["dup1", "other", "dup2"]
    assert drop_near_duplicates(order, similarity, threshold=1.01, k=3) == ["dup1", "dup2", "other"]


def test_dropping_near_duplicates_keeps_the_order_and_honours_a_limit_above_twenty() -> None:
    order = [f"m{i}" for i in range(50)]
    chosen = drop_near_duplicates(order, np.zeros((50, 50)), threshold=0.95, k=30)
    assert chosen == order[:30]


def test_hybrid_similarity_is_cosine_with_embeddings_and_jaccard_without() -> None:
    rows = [
        _row("red apple", 0, [1.0, 0.0]),
        _row("green apple", 1, [1.0, 1.0]),
        _row("red apple pie", 2, None),
    ]
    matrix = similarity_matrix(rows)
    assert matrix[0, 1] == pytest.approx(1 / np.sqrt(2))
    assert matrix[0, 2] == pytest.approx(2 / 3)  # {red, apple} of {red, apple, pie}
    assert matrix[1, 2] == pytest.approx(1 / 4)


def test_hybrid_time_bonus_orders_ties_by_the_questions_direction() -> None:
    early, late = _row("a", 0), _row("b", 60)
    rows = {early.id: early, late.id: late}
    recent = time_order_bonus(rows, TimeFocus.RECENT, 0.01)
    earliest = time_order_bonus(rows, TimeFocus.EARLIEST, 0.01)
    assert recent[late.id] == pytest.approx(0.01) and recent[early.id] == 0.0
    assert earliest[early.id] == pytest.approx(0.01) and earliest[late.id] == 0.0
    assert set(time_order_bonus(rows, TimeFocus.NONE, 0.01).values()) == {0.0}
