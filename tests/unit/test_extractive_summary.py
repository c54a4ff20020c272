"""The extractive summariser: deterministic, bounded, chronological, informative over filler."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.harness import make_settings
from worldmm.config import SummaryProvider
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.episodic.summarizer import (
    EXTRACTIVE_MODEL,
    ExtractiveSummarizer,
    LLMSummarizer,
    build_summarizer,
    extractive_summary,
)
from worldmm.memory.episodic.summary_tree import ChildCaption
from worldmm.scale import Scale

pytestmark = pytest.mark.unit

T0 = datetime(2025, 1, 6, 11, 0, tzinfo=UTC)

CAPTIONS = [
    "I turn my head to the left. I look at everyone. Katrina hands me the blue notebook from the shelf.",
    "I look at everyone. I turn my head to the left. I put the blue notebook in the desk drawer.",
    "I look at everyone. I walk to the kitchen and pour milk into a glass.",
    "I turn my head to the left. I look at everyone.",
    "Shure assembles the hard drive rack on the dining table. I look at everyone.",
    "I look at everyone. I turn my head to the left.",
]
TRANSCRIPTS = [
    "[11:00:05] Jake: Okay.\n[11:00:07] Katrina: Here is your notebook from the meeting.",
    "[11:00:35] Shure: Hmm...",
    "",
    "[11:01:40] Lucia: We need to buy flowers for Earth Day tomorrow.",
    "[11:02:02] Jake: Yeah, right.",
    "",
]


def _children() -> list[ChildCaption]:
    return [
        ChildCaption(f"w{n}", Scale.WINDOW, T0 + timedelta(seconds=30 * n), T0 + timedelta(seconds=30 * n + 30), c, t)
        for n, (c, t) in enumerate(zip(CAPTIONS, TRANSCRIPTS, strict=True))
    ]


def test_extractive_summary_is_deterministic_whatever_the_child_order() -> None:
    children = _children()
    assert extractive_summary(children, 600) == extractive_summary(list(reversed(children)), 600)


def test_extractive_summary_is_bounded() -> None:
    for budget in (120, 300, 600):
        assert 0 < len(extractive_summary(_children(), budget)) <= budget


def test_extractive_summary_keeps_chronological_order() -> None:
    summary = extractive_summary(_children(), 800)
    kept = ["Katrina hands me", "desk drawer", "pour milk", "buy flowers", "hard drive rack"]
    positions = [summary.index(k) for k in kept]
    assert positions == sorted(positions)


def test_extractive_summary_prefers_information_over_filler() -> None:
    # GIVEN room for about three sentences
    summary = extractive_summary(_children(), 260)
    # THEN the repeated filler and content-free speech are left out, the specific events kept
    assert "notebook" in summary
    assert "I look at everyone" not in summary
    assert "Yeah, right" not in summary and "Jake: Okay" not in summary
    # AND a repeated sentence is kept at most once at any length
    assert extractive_summary(_children(), 2000).count("I turn my head to the left.") <= 1


def test_extractive_summary_keeps_speech_with_content_on_its_own_line() -> None:
    summary = extractive_summary(_children(), 800)
    assert "Lucia: We need to buy flowers for Earth Day tomorrow." in summary.splitlines()


def test_summarizer_budget_grows_with_scale() -> None:
    summarizer = ExtractiveSummarizer(make_settings(summary_max_chars=150))
    short, model = summarizer.summarize(Scale.THREE_MIN, _children())
    longer, _ = summarizer.summarize(Scale.TEN_MIN, _children())
    assert model == EXTRACTIVE_MODEL
    assert len(short) <= 150 < len(longer) <= 225


def test_summary_provider_defaults_follow_the_llm() -> None:
    # The small local LLM gets the extractive summariser; a scripted (capable) model keeps the prompt
    local = make_settings(llm_provider="local")
    assert local.summary_backend == SummaryProvider.EXTRACTIVE
    assert isinstance(build_summarizer(local, lambda: ScriptedLLM()), ExtractiveSummarizer)
    assert isinstance(build_summarizer(make_settings(), lambda: ScriptedLLM()), LLMSummarizer)
    explicit = make_settings(llm_provider="local", summary_provider="llm")
    assert isinstance(build_summarizer(explicit, lambda: ScriptedLLM()), LLMSummarizer)
