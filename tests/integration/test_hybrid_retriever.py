"""Hybrid search on PostgreSQL: BM25 with term rarity, vector and graph lists, RRF, as-of time bounds, MMR."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.retrieval import MemoryWriter
from worldmm.retrieval.hybrid import hybrid_search
from worldmm.retrieval.lexical import segment_indexes
from worldmm.services import Services

pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 21, 12, 0, tzinfo=UTC)  # a Saturday


def test_hybrid_full_text_finds_keyword_matches(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    w.segment("I watered the tomatoes in the greenhouse", start=NOW - timedelta(hours=2))
    w.segment("I answered emails at my desk", start=NOW - timedelta(hours=1))
    result = hybrid_search(services, "u1", "when did I water the tomatoes?", now=NOW, limit=1)
    assert [m.text for m in result.items] == ["I watered the tomatoes in the greenhouse"]
    assert result.items[0].source == "hybrid"


def test_hybrid_bm25_weighs_the_rare_word_over_a_name_in_every_window(services: Services) -> None:
    # GIVEN "Shure" speaks in every window, and only one window mentions the screwdriver
    w = MemoryWriter(services, "u1")
    for i in range(8):
        w.segment(f"Shure: Shure says Shure wants item {i}", start=NOW - timedelta(hours=10 - i), embed=False)
    target = w.segment("Alice picked up the screwdriver", start=NOW - timedelta(hours=20), embed=False)
    # WHEN the question names both
    result = hybrid_search(services, "u1", "Did Shure see the screwdriver?", now=NOW, limit=1)
    # THEN the rare word decides, not the name repeated in every newer window
    assert [m.id for m in result.items] == [str(target)]


def test_hybrid_relevance_is_not_overridden_by_recency(services: Services) -> None:
    # GIVEN a relevant memory from 90 days ago and a barely related one from yesterday
    w = MemoryWriter(services, "u1")
    old = w.segment("I hiked the ridge trail above the lake", start=NOW - timedelta(days=90))
    w.segment("I walked to the lake shop", start=NOW - timedelta(days=1))
    result = hybrid_search(services, "u1", "ridge trail hike above the lake", now=NOW, limit=2)
    assert result.items[0].id == str(old)


def test_hybrid_sees_nothing_after_the_question_was_asked(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    before = w.segment("I locked the bike at the station", start=NOW - timedelta(hours=3))
    w.segment("I locked the bike at the office", start=NOW + timedelta(hours=3))
    result = hybrid_search(services, "u1", "where did I lock the bike", now=NOW, limit=5)
    assert [m.id for m in result.items] == [str(before)]


def test_hybrid_searches_the_range_the_question_names(services: Services) -> None:
    # GIVEN coffee on Friday morning and on Saturday morning
    w = MemoryWriter(services, "u1")
    friday = w.segment("I drank coffee with Katrina", start=datetime(2026, 3, 20, 9, 0, tzinfo=UTC))
    w.segment("I drank coffee with Katrina", start=datetime(2026, 3, 21, 9, 0, tzinfo=UTC))
    result = hybrid_search(services, "u1", "Who did I drink coffee with yesterday morning?", now=NOW, limit=5)
    assert [m.id for m in result.items] == [str(friday)]
    assert result.searched is not None and result.searched.endswith("(yesterday morning)")


def test_hybrid_widens_an_empty_named_range_and_says_so(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    monday = w.segment("I drank coffee with Katrina", start=datetime(2026, 3, 16, 9, 0, tzinfo=UTC))
    result = hybrid_search(services, "u1", "Who did I drink coffee with yesterday?", now=NOW, limit=5)
    assert [m.id for m in result.items] == [str(monday)]
    assert result.reason is not None and "searched everything before it" in result.reason
    assert result.searched is None


def test_hybrid_widens_an_empty_named_range_up_to_when_it_was_asked(services: Services) -> None:
    # GIVEN a presentation on a weekday talked about since that weekday last was, and nothing said on it
    w = MemoryWriter(services, "u1")
    talk = w.segment("Marco presents to the whole team", start=NOW - timedelta(hours=1))
    day = (NOW - timedelta(days=2)).strftime("%A")
    result = hybrid_search(services, "u1", f"Who is Marco presenting to on {day}?", now=NOW, limit=5)
    # THEN what was said after that day is searched too
    assert [m.id for m in result.items] == [str(talk)]


def test_hybrid_last_time_breaks_a_tie_towards_the_latest(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    older = w.segment("Tasha washed the dishes", start=NOW - timedelta(days=2))
    newer = w.segment("Tasha washed the dishes", start=NOW - timedelta(days=1))
    last = hybrid_search(services, "u1", "Who washed the dishes last time?", now=NOW, limit=2, diversify=False)
    first = hybrid_search(services, "u1", "Who washed the dishes first?", now=NOW, limit=2, diversify=False)
    assert [m.id for m in last.items] == [str(newer), str(older)]
    assert [m.id for m in first.items] == [str(older), str(newer)]


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


def test_hybrid_honours_a_limit_above_twenty(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    for i in range(30):
        w.segment(f"tomatoes number {i} ripened", start=NOW - timedelta(hours=i + 1))
    result = hybrid_search(services, "u1", "tomatoes", now=NOW, limit=25)
    assert len(result.items) == 25


def test_hybrid_lexical_index_sees_new_memories_at_once(services: Services) -> None:
    # GIVEN a warm process that searched once
    w = MemoryWriter(services, "u1")
    w.segment("I planted basil", start=NOW - timedelta(hours=2))
    assert hybrid_search(services, "u1", "basil", now=NOW).items
    # WHEN another memory is written (any process) and its caption later changes
    new = w.segment("I repotted the fern", start=NOW - timedelta(hours=1))
    # THEN the next search finds it by its words
    assert [m.id for m in hybrid_search(services, "u1", "fern", now=NOW, limit=1).items] == [str(new)]
    from sqlalchemy import text

    with services.db.unit_of_work("u1") as session:
        session.execute(text("UPDATE worldmm_segments SET caption = 'I potted a cactus' WHERE id = :id"), {"id": new})
        index = segment_indexes.get(session, "u1")
    assert "cactus" in index.vocabulary
    assert [m.id for m in hybrid_search(services, "u1", "cactus", now=NOW, limit=1).items] == [str(new)]


def test_hybrid_is_tenant_scoped_and_empty_with_a_reason(services: Services) -> None:
    other = MemoryWriter(services, "u2")
    other.segment("secret tomatoes")
    result = hybrid_search(services, "u1", "tomatoes", now=NOW)
    assert result.items == []
    assert result.reason == "no matching memories"
