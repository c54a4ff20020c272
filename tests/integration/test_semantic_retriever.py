"""Semantic retrieval (spec 001): cosine seed triples → PPR → edge score PPR(s)+PPR(o) → top valid triples."""

from __future__ import annotations

import pytest

from tests.support.harness import change_settings
from tests.support.retrieval import MemoryWriter
from worldmm.db.models import MemoryType
from worldmm.retrieval.semantic_retriever import retrieve_semantic
from worldmm.services import Services

pytestmark = pytest.mark.integration

SEM = MemoryType.SEMANTIC


@pytest.fixture
def facts(services: Services) -> dict[str, object]:
    w = MemoryWriter(services, "u1")
    summary = w.segment("ten minutes of the day", duration=600)
    ids = {
        "roommate": w.triple(summary, "Katrina", "is roommate of", "I", memory_type=SEM),
        "yoga": w.triple(summary, "Katrina", "practises", "yoga", memory_type=SEM),
        "fruit": w.triple(summary, "I", "often eats", "fruit", memory_type=SEM),
        "studio": w.triple(summary, "yoga", "happens at", "riverside studio", memory_type=SEM),
        "old": w.triple(summary, "Katrina", "is roommate of", "Alice", memory_type=SEM, invalidated=True),
        "episodic": w.triple(summary, "Katrina", "walked", "dog"),
    }
    return {"writer": w, "ids": {k: str(v) for k, v in ids.items()}}


def test_semantic_retriever_returns_facts_around_the_nearest_triples(services: Services, facts) -> None:
    # WHEN
    result = retrieve_semantic(services, "u1", "Katrina is roommate of I")
    ids = [m.id for m in result.items]
    # THEN the matching fact ranks first, its graph neighbours follow, and the text names the entities
    assert ids[0] == facts["ids"]["roommate"]
    assert facts["ids"]["yoga"] in ids
    assert result.items[0].text == "Katrina is roommate of I"
    assert result.items[0].memory_type.value == "semantic"
    scores = [m.score for m in result.items]
    assert scores == sorted(scores, reverse=True)


def test_semantic_retriever_never_returns_invalidated_or_episodic_triples(services: Services, facts) -> None:
    result = retrieve_semantic(services, "u1", "Katrina is roommate of Alice")
    ids = {m.id for m in result.items}
    assert facts["ids"]["old"] not in ids
    assert facts["ids"]["episodic"] not in ids


def test_semantic_retriever_drops_triples_invalidated_after_the_graph_was_cached(services: Services, facts) -> None:
    # GIVEN a cached semantic graph, then consolidation invalidates a triple (cache not yet invalidated)
    retrieve_semantic(services, "u1", "Katrina yoga")
    from datetime import UTC, datetime

    from sqlalchemy import update

    from worldmm.db.models import Triple

    with services.db.unit_of_work("u1") as session:
        session.execute(update(Triple).where(Triple.predicate == "practises").values(invalidated_at=datetime.now(UTC)))
    # WHEN
    result = retrieve_semantic(services, "u1", "Katrina yoga")
    # THEN the invalidated fact is not returned
    assert facts["ids"]["yoga"] not in {m.id for m in result.items}


def test_semantic_retriever_caps_at_top_k(services: Services, facts) -> None:
    change_settings(services, semantic_top_k=2)
    result = retrieve_semantic(services, "u1", "Katrina")
    assert len(result.items) == 2


def test_semantic_retriever_with_no_facts_is_empty_with_a_reason(services: Services) -> None:
    result = retrieve_semantic(services, "nobody", "anything")
    assert result.items == []
    assert result.reason == "no semantic memories yet"


def test_semantic_retriever_is_tenant_scoped(services: Services, facts) -> None:
    other = MemoryWriter(services, "u2")
    other.triple(other.segment("x", duration=600), "Katrina", "is roommate of", "Bob", memory_type=SEM)
    result = retrieve_semantic(services, "u1", "Katrina is roommate of Bob")
    assert all("Bob" not in m.text for m in result.items)
