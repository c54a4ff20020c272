"""Fusion, decay and diversity of the hybrid search (spec 002 "Layer 6: Hybrid Retrieval")."""

from __future__ import annotations

import pytest

from worldmm.retrieval.hybrid import decay_factor, mmr_select, rrf_fuse

pytestmark = pytest.mark.unit


def test_hybrid_rrf_sums_reciprocal_ranks_across_lists() -> None:
    # GIVEN an item at rank 1 in full text and rank 3 in vector search (the spec's example)
    scores = rrf_fuse([["a", "b"], ["c", "d", "a"]], k=60)
    # THEN its score is 1/61 + 1/63, and it beats items found by one list only
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["b"] == pytest.approx(1 / 62)
    assert max(scores, key=lambda item: scores[item]) == "a"


def test_hybrid_rrf_of_no_lists_is_empty() -> None:
    assert rrf_fuse([[], []], k=60) == {}


def test_hybrid_decay_halves_every_half_life() -> None:
    assert decay_factor(0, 30) == 1.0
    assert decay_factor(30, 30) == pytest.approx(0.5)
    assert decay_factor(90, 30) == pytest.approx(0.125)


def test_hybrid_decay_floor_keeps_long_lived_memories() -> None:
    # GIVEN a 1-year-old evergreen memory and a floor of 0.3
    assert decay_factor(365, 30, floor=0.3) == 0.3
    assert decay_factor(10, 30, floor=0.3) == pytest.approx(2 ** (-10 / 30))


def test_hybrid_decay_treats_future_timestamps_as_now() -> None:
    assert decay_factor(-5, 30) == 1.0


def test_hybrid_mmr_prefers_a_diverse_second_pick() -> None:
    # GIVEN two near-duplicates at the top and a slightly less relevant different item
    relevance = {"dup1": 1.0, "dup2": 0.95, "other": 0.8}
    similar = {frozenset({"dup1", "dup2"}): 1.0}

    def similarity(a: str, b: str) -> float:
        return similar.get(frozenset({a, b}), 0.0)

    # WHEN MMR picks two with lambda 0.7
    chosen = mmr_select(relevance, similarity, lam=0.7, k=2)
    # THEN the duplicate is skipped for the different item
    assert chosen == ["dup1", "other"]


def test_hybrid_mmr_with_lambda_one_is_pure_relevance() -> None:
    relevance = {"a": 0.9, "b": 0.5, "c": 0.7}
    assert mmr_select(relevance, lambda a, b: 1.0, lam=1.0, k=3) == ["a", "c", "b"]


def test_hybrid_mmr_pool_is_capped_at_twenty() -> None:
    relevance = {f"m{i}": 1.0 - i / 100 for i in range(50)}
    chosen = mmr_select(relevance, lambda a, b: 0.0, lam=0.7, k=30)
    assert len(chosen) == 20
    assert chosen[0] == "m0"
