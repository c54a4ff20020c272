"""Graph cache without Redis (spec 001): a warm process revalidates against the database's generation."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, text, update

from tests.support.retrieval import MemoryWriter
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.models import MemoryType, Segment, Triple
from worldmm.graph.build import GraphKey, UserGraph, build_graph
from worldmm.graph.cache.local import LocalGraphCache
from worldmm.graph.cache.port import load_graph, stored_generation
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services

pytestmark = pytest.mark.integration

EPI_30 = GraphKey("u1", MemoryType.EPISODIC, 30)
EPI_180 = GraphKey("u1", MemoryType.EPISODIC, 180)
SEM = GraphKey("u1", MemoryType.SEMANTIC)


def process(settings: Settings, db: Database) -> Services:
    """Services as one Lambda container has them: its own in-process graph cache (no REDIS_URL)."""
    return Services(settings.model_copy(update={"redis_url": None}), db=db, embedder=HashEmbedder(8))


def test_a_warm_chat_process_sees_triples_another_process_ingested(settings: Settings, db: Database) -> None:
    # GIVEN a chat process that built and cached the user's 30 s graph
    chat, ingest = process(settings, db), process(settings, db)
    writer = MemoryWriter(ingest, "u1")
    writer.triple(writer.segment("coffee with Katrina"), "I", "had coffee with", "Katrina")
    assert isinstance(chat.graph_cache, LocalGraphCache)
    assert load_graph(chat, EPI_30).edge_count == 1
    # WHEN another process (the ingest function) writes a triple, never touching the chat's cache
    writer.triple(writer.segment("lunch with Jake"), "I", "had lunch with", "Jake")
    # THEN the warm chat process serves the new graph
    assert load_graph(chat, EPI_30).edge_count == 2


def test_an_unchanged_graph_is_served_from_memory_without_a_rebuild(settings: Settings, db: Database) -> None:
    chat = process(settings, db)
    writer = MemoryWriter(chat, "u1")
    writer.triple(writer.segment("coffee with Katrina"), "I", "had coffee with", "Katrina")
    builds: list[UserGraph] = []

    def build() -> UserGraph:
        builds.append(build_graph(chat.db, EPI_30))
        return builds[-1]

    chat.graph_cache.get_or_build(EPI_30, build)
    chat.graph_cache.get_or_build(EPI_30, build)
    assert len(builds) == 1


def test_triple_writes_bump_only_their_own_scale(services: Services) -> None:
    # GIVEN a window triple and a 3 min summary triple
    writer = MemoryWriter(services, "u1")
    window = writer.segment("coffee")
    writer.triple(window, "I", "had", "coffee")
    writer.triple(writer.segment("morning", duration=180), "I", "spent", "morning")
    before = {k: stored_generation(services.db, k) for k in (EPI_30, EPI_180, SEM)}
    # WHEN another window triple is written
    writer.triple(window, "I", "drank", "tea")
    # THEN only the 30 s generation moved
    after = {k: stored_generation(services.db, k) for k in (EPI_30, EPI_180, SEM)}
    assert after[EPI_30] > before[EPI_30]  # a new value of the generation sequence (0009)
    assert {EPI_180: after[EPI_180], SEM: after[SEM]} == {EPI_180: before[EPI_180], SEM: before[SEM]}


def test_invalidating_a_semantic_triple_bumps_the_semantic_generation(services: Services) -> None:
    writer = MemoryWriter(services, "u1")
    fact = writer.triple(writer.segment("summary", duration=600), "I", "likes", "tea", memory_type=MemoryType.SEMANTIC)
    before = stored_generation(services.db, SEM)
    with services.db.unit_of_work("u1") as session:
        session.execute(update(Triple).where(Triple.id == fact).values(invalidated_at=text("now()")))
    assert stored_generation(services.db, SEM) > before  # a new value of the generation sequence (0009)


def test_deleting_a_segment_with_its_triples_bumps_its_scale(services: Services) -> None:
    writer = MemoryWriter(services, "u1")
    window = writer.segment("coffee")
    writer.triple(window, "I", "had", "coffee")
    before = stored_generation(services.db, EPI_30)
    with services.db.unit_of_work("u1") as session:
        session.execute(delete(Segment).where(Segment.id == window))
    assert stored_generation(services.db, EPI_30) > before


def test_graph_generations_are_tenant_scoped(services: Services) -> None:
    writer = MemoryWriter(services, "u1")
    writer.triple(writer.segment("coffee"), "I", "had", "coffee")
    assert stored_generation(services.db, EPI_30) >= 1
    assert stored_generation(services.db, GraphKey("u2", MemoryType.EPISODIC, 30)) == 0
    with services.db.unit_of_work("u2") as session:
        assert session.execute(text("SELECT count(*) FROM worldmm_graph_generations")).scalar_one() == 0
