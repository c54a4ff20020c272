"""Fusion, time tie-break and diversity of the hybrid search (spec 002 "Layer 6", relevance first)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from worldmm.retrieval.hybrid import SegmentRow, mmr_select, rrf_fuse, similarity_matrix, time_order_bonus
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


def test_hybrid_mmr_prefers_a_diverse_second_pick() -> None:
    # GIVEN two near-duplicates at the top and a slightly less relevant different item
    order = ["dup1", "dup2", "other"]
    relevance = {"dup1": 1.0, "dup2": 0.95, "other": 0.8}
    similarity = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    # WHEN MMR picks two with lambda 0.7
    chosen = mmr_select(relevance, similarity, order, lam=0.7, k=2)
    # THEN the duplicate is skipped for the different item
    assert chosen == ["dup1", "other"]


def test_hybrid_mmr_with_lambda_one_is_pure_relevance() -> None:
    order = ["a", "c", "b"]
    relevance = {"a": 0.9, "b": 0.5, "c": 0.7}
    assert mmr_select(relevance, np.ones((3, 3)), order, lam=1.0, k=3) == ["a", "c", "b"]


def test_hybrid_mmr_honours_a_limit_above_twenty() -> None:
    order = [f"m{i}" for i in range(50)]
    relevance = {item: 1.0 - i / 100 for i, item in enumerate(order)}
    chosen = mmr_select(relevance, np.zeros((50, 50)), order, lam=0.7, k=30)
    assert len(chosen) == 30
    assert chosen[0] == "m0"


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
