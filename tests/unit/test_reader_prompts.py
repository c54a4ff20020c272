"""The local reader's prompts: every judgement and reading starts alike, after the worked judgements."""

from __future__ import annotations

import pytest

from worldmm.retrieval.reader import READ_PURPOSE, judgement_messages

pytestmark = pytest.mark.unit


def test_every_judgement_and_reading_starts_with_the_same_worked_judgements() -> None:
    # The model's cache of that start is reused only when nothing before the question differs
    judged = judgement_messages("Where are my keys?", "My keys are in the drawer.")
    other = judgement_messages("How much was the coffee?", "That is four dollars fifty.")
    read = judgement_messages("Where are my keys?", "My keys are in the drawer.", READ_PURPOSE)
    start = judged[:-1]
    assert other[:-1] == start and read[:-1] == start
    assert start[0]["role"] == "system"
    replies = [m["content"] for m in start if m["role"] == "assistant"]
    assert sorted(set(replies)) == ["no", "yes"]  # worked judgements of both kinds
    assert "Where are my keys?" in judged[-1]["content"] and "My keys are in the drawer." in read[-1]["content"]
    assert judged[-1]["content"] != read[-1]["content"]
