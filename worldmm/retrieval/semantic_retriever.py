"""Semantic retrieval (spec 001): top triples by cosine → their nodes as a uniform reset vector → PPR
→ edge score PPR(subject) + PPR(object) → top 10 valid triples.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import text

from worldmm.db.models import MemoryType
from worldmm.db.queries import vector_literal
from worldmm.graph.build import ENTITY_KEY_SQL, LITERAL_KEY_SQL, GraphKey, key_to_uuid
from worldmm.graph.cache.port import load_graph
from worldmm.graph.ppr import personalized_pagerank, top_k, uniform_reset
from worldmm.retrieval.models import MemoryKind, RetrievalResult, RetrievedMemory

if TYPE_CHECKING:
    from worldmm.retrieval.port import HybridPorts


# Exact per-user scan of valid semantic triples (a filtered HNSW scan may return too few of them).
_SEED_SQL = f"""
WITH candidates AS MATERIALIZED (
    SELECT t.id, t.subject_entity_id, t.object_entity_id, t.object_literal,
           t.embedding <=> CAST(:embedding AS halfvec) AS distance
    FROM worldmm_triples t
    WHERE t.user_id = :user_id AND t.memory_type = 'semantic' AND t.invalidated_at IS NULL
      AND t.embedding IS NOT NULL AND (t.valid_at IS NULL OR t.valid_at <= :until)
), nearest AS (
    SELECT * FROM candidates ORDER BY distance, id LIMIT :k
)
SELECT {ENTITY_KEY_SQL.format(ent="se")} AS subject_key,
       coalesce({ENTITY_KEY_SQL.format(ent="oe")},
                {LITERAL_KEY_SQL.format(col="n.object_literal")}) AS object_key
FROM nearest n
JOIN worldmm_entities se ON se.id = n.subject_entity_id
LEFT JOIN worldmm_entities oe ON oe.id = n.object_entity_id
"""

_TRIPLES_SQL = """
SELECT t.id, t.segment_id, t.predicate, t.object_literal, t.valid_at, t.created_at,
       sc.canonical_name AS subject_name, oc.canonical_name AS object_name
FROM worldmm_triples t
JOIN worldmm_entities se ON se.id = t.subject_entity_id
JOIN worldmm_entities sc ON sc.id = coalesce(se.canonical_entity_id, se.id)
LEFT JOIN worldmm_entities oe ON oe.id = t.object_entity_id
LEFT JOIN worldmm_entities oc ON oc.id = coalesce(oe.canonical_entity_id, oe.id)
WHERE t.user_id = :user_id AND t.id = ANY(:ids) AND t.memory_type = 'semantic' AND t.invalidated_at IS NULL
  AND (t.valid_at IS NULL OR t.valid_at <= :until)
"""


def retrieve_semantic(
    services: HybridPorts, user_id: str, query: str, *, now: datetime | None = None
) -> RetrievalResult:
    """The user's most relevant semantic facts for `query` that are valid and known by `now`."""
    settings = services.settings
    until = now or datetime.now(UTC)
    [embedding] = services.embedder.embed([query])
    with services.db.unit_of_work(user_id) as session:
        seed_rows = session.execute(
            text(_SEED_SQL),
            {"embedding": vector_literal(embedding), "user_id": user_id, "k": settings.semantic_seed_k, "until": until},
        ).all()
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
    params = {"user_id": user_id, "ids": [t for t, _ in ranked], "until": until}
    with services.db.unit_of_work(user_id) as session:
        rows = {r.id: r for r in session.execute(text(_TRIPLES_SQL), params)}
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
