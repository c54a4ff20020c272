"""Semantic retrieval (spec 001): top triples by cosine → their nodes as a uniform reset vector → PPR
→ edge score PPR(subject) + PPR(object) → top 10 valid triples.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from worldmm.db.models import MemoryType
from worldmm.db.queries.retrieval import semantic_seed_keys, semantic_triples
from worldmm.graph.build import GraphKey, key_to_uuid
from worldmm.graph.cache.port import load_graph
from worldmm.graph.ppr import personalized_pagerank, top_k, uniform_reset
from worldmm.retrieval.models import MemoryKind, RetrievalResult, RetrievedMemory

if TYPE_CHECKING:
    from worldmm.retrieval.port import HybridPorts


def retrieve_semantic(
    services: HybridPorts, user_id: str, query: str, *, now: datetime | None = None
) -> RetrievalResult:
    """The user's most relevant semantic facts for `query` that are valid and known by `now`."""
    settings = services.retrieval_settings
    until = now or datetime.now(UTC)
    [embedding] = services.embedder.embed([query])
    with services.db.unit_of_work(user_id) as session:
        seed_rows = semantic_seed_keys(session, user_id, embedding, settings.semantic_seed_k, until)
    if not seed_rows:
        return RetrievalResult(memory_type=MemoryKind.SEMANTIC, query=query, reason="no semantic memories yet")
    seeds = [bytes(k) for row in seed_rows for k in (row.subject_key, row.object_key)]

    graph = load_graph(services, GraphKey(user_id, MemoryType.SEMANTIC))
    seed_nodes = graph.node_indices(seeds)
    if seed_nodes.size == 0:
        return RetrievalResult(memory_type=MemoryKind.SEMANTIC, query=query, reason="no semantic graph yet")
    scores = personalized_pagerank(
        graph,
        uniform_reset(graph, seed_nodes),
        damping=settings.ppr_damping,
        tolerance=settings.ppr_tolerance,
        max_iterations=settings.ppr_max_iterations,
    )
    edge_scores = graph.edge_scores(scores)
    # Ask for more than needed: a triple invalidated since the graph was cached is dropped below.
    best = top_k(edge_scores, 2 * settings.semantic_top_k)
    ranked = [(key_to_uuid(graph.edge_triple[i]), float(edge_scores[i])) for i in best]
    items = _load_triples(services, user_id, ranked, until)[: settings.semantic_top_k]
    return RetrievalResult(
        memory_type=MemoryKind.SEMANTIC,
        query=query,
        items=items,
        reason=None if items else "no valid semantic facts near the query",
    )


def _load_triples(
    services: HybridPorts, user_id: str, ranked: list[tuple[uuid.UUID, float]], until: datetime
) -> list[RetrievedMemory]:
    with services.db.unit_of_work(user_id) as session:
        rows = semantic_triples(session, user_id, [t for t, _ in ranked], until)
    items: list[RetrievedMemory] = []
    for triple_id, score in ranked:
        row = rows.get(triple_id)
        if row is None:
            continue
        obj = row.object_name if row.object_name is not None else row.object_literal
        items.append(
            RetrievedMemory(
                id=str(triple_id),
                memory_type=MemoryKind.SEMANTIC,
                text=f"{row.subject_name} {row.predicate} {obj}",
                score=score,
                source="ppr",
                start_time=row.valid_at or row.created_at,
                segment_id=str(row.segment_id),
            )
        )
    return items
