"""The summary tree of the scales and the merge prompt (spec 001 Layer 1: test_multiscale_merge_prompt)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.harness import make_settings
from worldmm.errors import ModelOutputError
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.episodic.summary_tree import (
    ChildCaption,
    SlotKey,
    children_of,
    fingerprint,
    merge_captions,
    parent_of,
)
from worldmm.scale import Scale

pytestmark = pytest.mark.unit

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def _child(n: int, caption: str, scale: int = Scale.WINDOW) -> ChildCaption:
    start = T0 + timedelta(seconds=30 * n)
    return ChildCaption(f"id-{n}", scale, start, start + timedelta(seconds=30), caption)


def test_multiscale_3min_summary_covers_six_windows() -> None:
    # GIVEN the first 3 min summary / WHEN its children are listed / THEN they are windows 0..5
    assert children_of(SlotKey(Scale.THREE_MIN, 0)) == [SlotKey(Scale.WINDOW, n) for n in range(6)]


def test_multiscale_10min_summary_is_three_3min_plus_remaining_minute() -> None:
    # GIVEN 10 min summary 1 (windows 20..39)
    children = children_of(SlotKey(Scale.TEN_MIN, 1))
    # THEN it merges 3 min summaries 3, 4, 5 and the remaining minute: windows 38 and 39
    assert children == [
        SlotKey(Scale.THREE_MIN, 3),
        SlotKey(Scale.THREE_MIN, 4),
        SlotKey(Scale.THREE_MIN, 5),
        SlotKey(Scale.WINDOW, 38),
        SlotKey(Scale.WINDOW, 39),
    ]
    # AND 3 min summary 3 starts at window 20 (aligned to its 10 min block, not 18)
    assert children_of(SlotKey(Scale.THREE_MIN, 3))[0] == SlotKey(Scale.WINDOW, 20)


def test_multiscale_1h_summary_covers_six_10min_summaries() -> None:
    assert children_of(SlotKey(Scale.HOUR, 0)) == [SlotKey(Scale.TEN_MIN, n) for n in range(6)]


def test_multiscale_every_window_of_an_hour_belongs_to_exactly_one_summary_chain() -> None:
    # GIVEN the 120 windows of one hour
    covered: list[SlotKey] = []
    for scale_parent in [SlotKey(Scale.TEN_MIN, j) for j in range(6)]:
        for child in children_of(scale_parent):
            covered += children_of(child) if child.duration_seconds == Scale.THREE_MIN else [child]
    # THEN each window appears exactly once, and parent_of inverts children_of at every scale
    assert sorted(c.window_index for c in covered) == list(range(120))
    for n in range(120):
        parent = parent_of(SlotKey(Scale.WINDOW, n))
        assert parent is not None and SlotKey(Scale.WINDOW, n) in children_of(parent)
    for key in [SlotKey(Scale.THREE_MIN, k) for k in range(18)] + [SlotKey(Scale.TEN_MIN, j) for j in range(6)]:
        parent = parent_of(key)
        assert parent is not None and key in children_of(parent)
    assert parent_of(SlotKey(Scale.HOUR, 0)) is None


def test_multiscale_merge_prompt_assembles_six_captions_in_time_order_and_parses_summary() -> None:
    # GIVEN six window captions, handed over out of order
    children = [_child(n, f"caption number {n}") for n in (3, 0, 5, 1, 4, 2)]
    llm = ScriptedLLM().script("merge_captions", {"summary": "  I cooked dinner with Alice.  "})
    # WHEN they are merged into a 3 min summary
    summary, _ = merge_captions(llm, make_settings(), Scale.THREE_MIN, children)
    # THEN the prompt lists all six, numbered in time order, for a 3-minute summary, with low effort
    request = llm.calls_for("merge_captions")[0]
    prompt = request.prompt_text
    positions = [prompt.index(f"caption number {n}") for n in range(6)]
    assert positions == sorted(positions)
    assert "1. [09:00:00-09:00:30, 30-second] caption number 0" in prompt
    assert "6. [09:02:30-09:03:00, 30-second] caption number 5" in prompt
    assert "3-minute" in prompt and "$" not in prompt
    assert request.reasoning_effort == "low" and request.response_schema is not None
    # AND the answer is parsed to the summary string
    assert summary == "I cooked dinner with Alice."


def test_multiscale_merge_prompt_rejects_an_unparsable_answer() -> None:
    llm = ScriptedLLM().script("merge_captions", "I am not JSON")
    with pytest.raises(ModelOutputError):
        merge_captions(llm, make_settings(), Scale.THREE_MIN, [_child(0, "a"), _child(1, "b")])


def test_multiscale_fingerprint_changes_when_a_child_caption_changes() -> None:
    children = [_child(n, f"c{n}") for n in range(6)]
    changed = [*children[:5], _child(5, "re-enriched caption")]
    assert fingerprint(children) == fingerprint(list(reversed(children)))
    assert fingerprint(children) != fingerprint(changed)
