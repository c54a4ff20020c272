"""Episodic retrieval (spec 001): query entities → PPR per scale → top-K per scale → LLM rerank → top 3.

Seeds are the user's canonical entities nearest (cosine ≥ ENTITY_MATCH_THRESHOLD) to the entities
NER finds in the query. A segment's score at its scale is the PPR mass of the distinct nodes of its
triples. The cross-scale reranker picks the final captions; with no seeds, or when the reranker fails,
the hybrid search answers instead (with the PPR ranking as its graph list when there is one).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from pydantic import BaseModel
from sqlalchemy import text

from worldmm.db.models import MemoryType
from worldmm.db.queries import nearest_canonical_entities
from worldmm.errors import GpuUnavailableError, ModelOutputError
from worldmm.graph.build import GraphKey, key_to_uuid
from worldmm.graph.cache import load_graph
from worldmm.graph.ppr import personalized_pagerank, top_k, uniform_reset
from worldmm.llm.structured import build_request, complete_structured
from worldmm.memory.episodic.segment_text import segment_memory_text
from worldmm.retrieval.hybrid import hybrid_search
from worldmm.retrieval.models import MemoryKind, RetrievalResult, RetrievedMemory
from worldmm.retrieval.sanitize import sanitize_memory_text

if TYPE_CHECKING:
    from worldmm.services import Services

logger = Logger(service="worldmm", child=True)

RERANK_PURPOSE = "cross_scale_rerank"
SEEDS_PER_ENTITY = 3

_SEGMENTS_SQL = """
SELECT id, caption, transcript, start_time, end_time, duration_seconds
FROM worldmm_segments WHERE user_id = :user_id AND id = ANY(:ids)
"""


class RerankResult(BaseModel):
    """The reranker's choice: candidate numbers, most relevant first."""

    selected: list[int]


@dataclass(frozen=True)
class Candidate:
    segment_id: uuid.UUID
    scale: int
    score: float


@dataclass
class _Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, prompt: int, completion: int) -> None:
        self.prompt_tokens += prompt
        self.completion_tokens += completion


def query_seed_entities(services: Services, user_id: str, query: str, usage: _Usage | None = None) -> list[bytes]:
    """16-byte keys of the canonical entities the query mentions (NER + embedding match ≥ threshold)."""
    from worldmm.memory.episodic.openie import extract_entities

    settings = services.settings
    try:
        names, _warnings, response = extract_entities(services.llm, settings, query)
    except GpuUnavailableError:
        raise
    except Exception as exc:  # NER is an optimisation of recall: a failing model must not fail the search
        logger.warning("query NER failed, searching without seed entities: %s", exc)
        names = []
    else:
        if usage is not None:
            usage.add(response.prompt_tokens, response.completion_tokens)
    names = [n for n in dict.fromkeys(n.strip() for n in names) if n]
    if not names:
        return []
    embeddings = services.embedder.embed(names)
    seeds: list[bytes] = []
    with services.db.unit_of_work(user_id) as session:
        for embedding in embeddings:
            for match in nearest_canonical_entities(session, user_id, embedding, SEEDS_PER_ENTITY):
                if match.similarity >= settings.entity_match_threshold:
                    seeds.append(match.id.bytes)
    return list(dict.fromkeys(seeds))


def ppr_candidates(services: Services, user_id: str, seeds: list[bytes]) -> list[Candidate]:
    """Top-K segments per scale by PPR from the seed entities (10 / 5 / 5 / 3 by default)."""
    settings = services.settings
    candidates: list[Candidate] = []
    for scale, k in settings.episodic_top_k.items():
        graph = load_graph(services, GraphKey(user_id, MemoryType.EPISODIC, scale))
        seed_nodes = graph.node_indices(seeds)
        if seed_nodes.size == 0:
            continue
        scores = personalized_pagerank(
            graph,
            uniform_reset(graph, seed_nodes),
            damping=settings.ppr_damping,
            tolerance=settings.ppr_tolerance,
            max_iterations=settings.ppr_max_iterations,
        )
        segment_scores = graph.segment_scores(scores)
        for index in top_k(segment_scores, k):
            candidates.append(Candidate(key_to_uuid(graph.segment_keys[index]), scale, float(segment_scores[index])))
    return candidates


def _describe(memory: RetrievedMemory, number: int, max_chars: int) -> str:
    when = memory.start_time.isoformat(timespec="minutes") if memory.start_time else "unknown time"
    scale = f"{memory.duration_seconds}s" if memory.duration_seconds else "?"
    body = sanitize_memory_text(memory.text, max_chars)
    return f"[{number}] ({scale} segment, {when}) <memory>{body}</memory>"


def rerank(services: Services, query: str, memories: list[RetrievedMemory], usage: _Usage) -> list[RetrievedMemory]:
    """The cross-scale reranker's top picks (raises ModelOutputError if it answers nonsense)."""
    settings = services.settings
    request = build_request(
        RERANK_PURPOSE,
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=RerankResult,
        query=sanitize_memory_text(query, settings.memory_text_max_chars),
        k=settings.episodic_final_k,
        candidates="\n".join(_describe(m, i, settings.memory_text_max_chars) for i, m in enumerate(memories, start=1)),
    )
    result, response = complete_structured(services.llm, request, RerankResult)
    usage.add(response.prompt_tokens, response.completion_tokens)
    picked = [memories[n - 1] for n in dict.fromkeys(result.selected) if 1 <= n <= len(memories)]
    if not picked and memories:
        raise ModelOutputError("reranker selected no valid candidate")
    return [m.model_copy(update={"source": "rerank"}) for m in picked[: settings.episodic_final_k]]


def retrieve_episodic(services: Services, user_id: str, query: str, *, now: datetime | None = None) -> RetrievalResult:
    """The top captions across the four temporal scales for `query`."""
    started = time.perf_counter()
    settings = services.settings
    now = now or datetime.now(UTC)
    usage = _Usage()
    seeds = query_seed_entities(services, user_id, query, usage)
    candidates = ppr_candidates(services, user_id, seeds) if seeds else []
    reason: str | None = None
    if not candidates:
        reason = "no known entities in the query" if not seeds else "no episodic memories near the query entities"
        result = hybrid_search(
            services,
            user_id,
            query,
            now=now,
            limit=settings.episodic_final_k,
            reason=f"hybrid fallback: {reason}",
        )
        return result.model_copy(
            update={"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
        )

    memories = _load_segments(services, user_id, candidates)
    if not memories:
        result = hybrid_search(
            services,
            user_id,
            query,
            now=now,
            limit=settings.episodic_final_k,
            reason="hybrid fallback: graph candidates have no captions",
        )
        return result.model_copy(
            update={"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
        )
    try:
        chosen = rerank(services, query, memories, usage)
        reason = None
    except GpuUnavailableError:
        raise
    except Exception as exc:  # the rerank model failed: fuse the PPR ranking with text search instead
        logger.warning("cross-scale rerank failed, falling back to hybrid search: %s", exc)
        # PPR scores of different scales are not comparable; interleave the scales by rank instead.
        rank_in_scale: dict[str, int] = {}
        counters: dict[int | None, int] = {}
        for m in memories:
            counters[m.duration_seconds] = counters.get(m.duration_seconds, 0) + 1
            rank_in_scale[m.id] = counters[m.duration_seconds]
        ranking = [uuid.UUID(m.id) for m in sorted(memories, key=lambda m: rank_in_scale[m.id])]
        fallback = hybrid_search(
            services, user_id, query, now=now, limit=settings.episodic_final_k, graph_ranking=ranking
        )
        chosen = fallback.items
        reason = "hybrid fallback: rerank failed"
    logger.debug("episodic retrieval took %.1f ms", (time.perf_counter() - started) * 1000)
    return RetrievalResult(
        memory_type=MemoryKind.EPISODIC,
        query=query,
        items=chosen,
        reason=reason,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
    )


def _load_segments(services: Services, user_id: str, candidates: list[Candidate]) -> list[RetrievedMemory]:
    """The candidate segments' captions, in candidate order (scale by scale, best first)."""
    ids = list(dict.fromkeys(c.segment_id for c in candidates))
    with services.db.unit_of_work(user_id) as session:
        rows = {r.id: r for r in session.execute(text(_SEGMENTS_SQL), {"user_id": user_id, "ids": ids})}
    memories: list[RetrievedMemory] = []
    seen: set[uuid.UUID] = set()
    for c in candidates:
        row = rows.get(c.segment_id)
        if row is None or c.segment_id in seen or not (row.caption or row.transcript):
            continue
        seen.add(c.segment_id)
        memories.append(
            RetrievedMemory(
                id=str(row.id),
                memory_type=MemoryKind.EPISODIC,
                text=segment_memory_text(row.caption, row.transcript),
                score=c.score,
                source="ppr",
                start_time=row.start_time,
                end_time=row.end_time,
                duration_seconds=row.duration_seconds,
                segment_id=str(row.id),
            )
        )
    return memories
