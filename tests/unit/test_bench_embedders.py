"""The embedder benchmark's arithmetic: the fusion it ranks by, what a question sees, recall by half."""

from __future__ import annotations

import numpy as np

from bench.bench_embedders import fused_ranking, recall
from worldmm.eval.baselines import top

WEIGHTS = (1.0, 0.75)


def test_a_window_not_yet_ended_when_asked_is_never_ranked() -> None:
    lexical = np.array([0.0, 3.0, 0.5, 9.0])
    dense = np.array([0.9, 0.1, 0.5, 0.99])
    visible = np.array([True, True, True, False])
    assert 3 not in fused_ranking(lexical, dense, visible, pool=50, weights=WEIGHTS)
    assert 3 not in top(dense, visible, 10)


def test_fusion_lets_a_sure_leg_win_and_keeps_windows_without_the_question_s_words() -> None:
    lexical = np.array([0.0, 9.0, 0.5, 0.4])  # BM25 sure of window 1, window 2 its second
    dense = np.array([0.595, 0.59, 0.60, 0.10])  # cosine barely prefers window 2; window 1 its third
    visible = np.ones(4, dtype=bool)
    ranking = fused_ranking(lexical, dense, visible, pool=50, weights=WEIGHTS)
    assert ranking[0] == 1  # rank fusion (RRF) would put window 2 first: ranks 2 and 1 against 1 and 3
    assert 0 in ranking  # no shared word, found by the dense leg


def test_each_leg_is_cut_to_the_pool() -> None:
    lexical = np.array([5.0, 4.0, 3.0, 0.0])
    dense = np.array([0.1, 0.2, 0.3, 0.9])
    ranking = fused_ranking(lexical, dense, np.ones(4, dtype=bool), pool=1, weights=WEIGHTS)
    assert sorted(ranking) == [0, 3]


def test_recall_counts_a_question_once_per_half_and_in_all() -> None:
    rows = [(0, [1, 2], {2}), (1, [3], {0}), (0, [5], {5})]
    result = recall(rows)
    assert result["tuning"] == {"questions": 2, "r@1": 0.5, "r@10": 1.0}
    assert result["held_out"] == {"questions": 1, "r@1": 0.0, "r@10": 0.0}
    assert result["all"]["r@10"] == round(2 / 3, 3)
