"""Hybrid search on PostgreSQL: full text + vector + graph lists, RRF, decay with floor, MMR."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support_retrieval import MemoryWriter
from worldmm.retrieval.hybrid import hybrid_search
from worldmm.services import Services

pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 21, 12, 0, tzinfo=UTC)


def test_hybrid_full_text_finds_keyword_matches(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    w.segment("I watered the tomatoes in the greenhouse", start=NOW - timedelta(hours=2))
    w.segment("I answered emails at my desk", start=NOW - timedelta(hours=1))
    result = hybrid_search(services, "u1", "when did I water the tomatoes?", now=NOW, limit=1)
    assert [m.text for m in result.items] == ["I watered the tomatoes in the greenhouse"]
    assert result.items[0].source == "hybrid"


def test_hybrid_decay_prefers_the_recent_of_two_equal_matches(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    old = w.segment("I played chess with Tom", start=NOW - timedelta(days=60))
    new = w.segment("I played chess with Tom", start=NOW - timedelta(days=1))
    result = hybrid_search(services, "u1", "chess with Tom", now=NOW, limit=2)
    assert [m.id for m in result.items] == [str(new), str(old)]
    assert result.items[0].score > 2 * result.items[1].score


def test_hybrid_decay_floor_keeps_old_hour_summaries(services: Services) -> None:
    # GIVEN an equal match as a 90-day-old 1 h summary and as a 90-day-old 30 s window
    w = MemoryWriter(services, "u1")
    window = w.segment("Hiking the ridge trail", start=NOW - timedelta(days=90))
    summary = w.segment("Hiking the ridge trail", start=NOW - timedelta(days=90), duration=3600)
    result = hybrid_search(services, "u1", "ridge trail hiking", now=NOW, limit=2)
    scores = {m.id: m.score for m in result.items}
    # THEN the summary decays only to the floor (0.3), the window to 2^-3
    assert scores[str(summary)] > 2 * scores[str(window)]


def test_hybrid_graph_ranking_is_fused_in(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    a = w.segment("alpha window", start=NOW - timedelta(hours=1), embed=False)
    b = w.segment("beta window", start=NOW - timedelta(hours=1), embed=False)
    result = hybrid_search(services, "u1", "nothing matches this", now=NOW, limit=2, graph_ranking=[b, a])
    assert [m.id for m in result.items] == [str(b), str(a)]


def test_hybrid_mmr_skips_a_near_duplicate(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    t = NOW - timedelta(hours=1)
    twins = {
        str(w.segment("I baked sourdough bread in the kitchen", start=t)),
        str(w.segment("I baked sourdough bread in the kitchen", start=t + timedelta(seconds=1))),
    }
    other = w.segment("I baked cookies for the neighbours", start=t)
    # WHEN two are asked for
    result = hybrid_search(services, "u1", "baked sourdough bread kitchen", now=NOW, limit=2)
    # THEN one twin, then the different memory rather than the other twin
    first, second = (m.id for m in result.items)
    assert first in twins
    assert second == str(other)


def test_hybrid_is_tenant_scoped_and_empty_with_a_reason(services: Services) -> None:
    other = MemoryWriter(services, "u2")
    other.segment("secret tomatoes")
    result = hybrid_search(services, "u1", "tomatoes", now=NOW)
    assert result.items == []
    assert result.reason == "no matching memories"
