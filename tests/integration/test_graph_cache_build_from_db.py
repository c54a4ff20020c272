"""Graphs built from PostgreSQL: per scale, valid semantic triples only, literal leaves, tenant-scoped."""

from __future__ import annotations

import pytest

from tests.support.retrieval import MemoryWriter
from worldmm.db.models import Entity, MemoryType
from worldmm.graph.build import GraphKey, build_graph, key_to_uuid, literal_key
from worldmm.graph.cache.port import load_graph
from worldmm.services import Services

pytestmark = pytest.mark.integration


def _triple_ids(graph) -> set:
    return {key_to_uuid(k) for k in graph.edge_triple}


def _segment_ids(graph) -> set:
    return {key_to_uuid(k) for k in graph.segment_keys}


def test_graph_build_episodic_graph_holds_only_its_scale(services: Services) -> None:
    # GIVEN triples on a 30 s window and on a 3 min summary
    w = MemoryWriter(services, "u1")
    window = w.segment("I had coffee with Katrina")
    summary = w.segment("Morning with Katrina", duration=180)
    w.triple(window, "I", "had coffee with", "Katrina")
    w.triple(summary, "I", "spent the morning with", "Katrina")
    # WHEN each scale's graph is built
    g30 = build_graph(services.db, GraphKey("u1", MemoryType.EPISODIC, 30))
    g180 = build_graph(services.db, GraphKey("u1", MemoryType.EPISODIC, 180))
    # THEN each holds its own scale's triple and segment, without triple labels (segments are what it ranks)
    assert (g30.edge_count, _segment_ids(g30)) == (1, {window})
    assert (g180.edge_count, _segment_ids(g180)) == (1, {summary})
    assert g30.edge_triple.size == g180.edge_triple.size == 0
    # while the semantic graph keeps them: the semantic retriever returns triples
    semantic = w.triple(summary, "I", "often drinks", "coffee", memory_type=MemoryType.SEMANTIC)
    assert _triple_ids(build_graph(services.db, GraphKey("u1", MemoryType.SEMANTIC))) == {semantic}


def test_graph_build_semantic_graph_excludes_invalidated_triples(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    summary = w.segment("10 minute summary", duration=600)
    valid = w.triple(summary, "I", "often eats", "fruit", memory_type=MemoryType.SEMANTIC)
    w.triple(summary, "I", "dislikes", "fruit", memory_type=MemoryType.SEMANTIC, invalidated=True)
    w.triple(summary, "I", "ate", "fruit")  # episodic: not in the semantic graph
    graph = build_graph(services.db, GraphKey("u1", MemoryType.SEMANTIC))
    assert _triple_ids(graph) == {valid}


def test_graph_build_literal_objects_become_leaf_nodes(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    seg = w.segment("The meeting started at 2:30 PM")
    w.triple(seg, "meeting", "started at", literal="2:30 PM")
    w.triple(seg, "I", "attended", "meeting")
    graph = build_graph(services.db, GraphKey("u1", MemoryType.EPISODIC, 30))
    [leaf] = graph.node_indices([literal_key("2:30 pm")]).tolist()  # SQL and Python keys agree
    assert graph.degree[leaf] == 1.0
    assert graph.node_count == 3


def test_graph_build_maps_alias_entities_to_their_canonical_node(services: Services) -> None:
    # GIVEN a triple whose subject is an alias row ("Kate" → Katrina)
    w = MemoryWriter(services, "u1")
    seg = w.segment("Kate waved")
    katrina = w.entity("Katrina")
    with services.db.unit_of_work("u1") as session:
        alias = Entity(user_id="u1", surface_form="Kate", canonical_entity_id=katrina)
        session.add(alias)
    w.entities["Kate"] = alias.id
    w.triple(seg, "Kate", "waved at", "I")
    graph = build_graph(services.db, GraphKey("u1", MemoryType.EPISODIC, 30))
    # THEN the edge lands on the canonical Katrina node
    assert graph.node_indices([katrina.bytes]).size == 1
    assert graph.node_indices([alias.id.bytes]).size == 0


def test_graph_build_sees_only_the_users_own_triples(services: Services) -> None:
    mine, theirs = MemoryWriter(services, "u1"), MemoryWriter(services, "u2")
    segment = mine.segment("a")
    mine.triple(segment, "I", "saw", "Alice")
    theirs.triple(theirs.segment("b"), "I", "saw", "Bob")
    graph = build_graph(services.db, GraphKey("u1", MemoryType.EPISODIC, 30))
    assert (graph.edge_count, _segment_ids(graph)) == (1, {segment})
    assert graph.node_indices([theirs.entities["Bob"].bytes]).size == 0


def test_graph_load_without_redis_serves_a_new_triple_with_no_explicit_invalidation(services: Services) -> None:
    # GIVEN a cached semantic graph (no Redis: the in-process cache)
    w = MemoryWriter(services, "u1")
    summary = w.segment("summary", duration=600)
    w.triple(summary, "I", "likes", "tea", memory_type=MemoryType.SEMANTIC)
    key = GraphKey("u1", MemoryType.SEMANTIC)
    assert load_graph(services, key).edge_count == 1
    # WHEN a triple is inserted and nobody calls invalidate (another process wrote it)
    w.triple(summary, "I", "likes", "coffee", memory_type=MemoryType.SEMANTIC)
    # THEN the database's graph generation moved and the new graph is served
    assert load_graph(services, key).edge_count == 2


def test_graph_load_with_redis_down_rebuilds_from_the_database(services: Services) -> None:
    from tests.support.harness import _free_port, make_settings
    from worldmm.graph.cache.port import build_graph_cache

    services.__dict__["graph_cache"] = build_graph_cache(make_settings(redis_url=f"redis://127.0.0.1:{_free_port()}/0"))
    w = MemoryWriter(services, "u1")
    summary = w.segment("summary", duration=600)
    w.triple(summary, "I", "likes", "tea", memory_type=MemoryType.SEMANTIC)
    key = GraphKey("u1", MemoryType.SEMANTIC)
    assert load_graph(services, key).edge_count == 1
    w.triple(summary, "I", "likes", "coffee", memory_type=MemoryType.SEMANTIC)
    assert load_graph(services, key).edge_count == 2  # nothing cached: always the database's truth
