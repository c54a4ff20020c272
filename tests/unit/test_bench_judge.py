"""The judge calibration's arithmetic: AUC, refusals by threshold, reorders by margin."""

from __future__ import annotations

from bench.bench_judge import Judged, auc, summarise


def test_auc_counts_the_pairs_a_sentence_that_answers_wins() -> None:
    assert auc([2.0, 1.0], [0.0, 1.0]) == (2 + 1.5) / 4
    assert auc([1.0], []) is None


def test_a_question_is_refused_only_when_every_judged_sentence_is_below_the_threshold() -> None:
    judged = [
        Judged("a", refusal=False, log_odds=[-1.0, 0.2], answers=[False, True]),
        Judged("b", refusal=True, log_odds=[-2.5, -1.5], answers=[False, False]),
    ]
    refusals = summarise(judged)["refusal_below"]
    assert refusals["-1.0"] == {"answerable_refused": 0, "unanswerable_refused": 1}
    assert refusals["0.5"] == {"answerable_refused": 1, "unanswerable_refused": 1}


def test_a_reorder_counts_only_where_the_surest_leads_the_first_by_the_margin() -> None:
    judged = [
        Judged("right", refusal=False, log_odds=[0.0, 1.2], answers=[False, True]),
        Judged("wrong", refusal=False, log_odds=[0.0, 2.0], answers=[True, False]),
    ]
    margins = summarise(judged)["reorder_margin"]
    assert margins["1.0"] == {"made_right": 1, "made_wrong": 1}
    assert margins["1.5"] == {"made_right": 0, "made_wrong": 1}
    assert summarise(judged)["auc_within_a_question"] == 0.5
