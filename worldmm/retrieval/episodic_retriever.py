"""Episodic retrieval: BM25 + dense + entity-graph rankings fused across the four temporal scales.

The graph leg follows HippoRAG 2's idea with no model call per query: the query's seed entities are
the user's entities named in it (matched on the names and aliases the memory holds), each weighted
by its specificity — the inverse of how many memories it appears in — so a hub such as "I", present
in nearly every triple, cannot drown the rare entity the question is about. PPR spreads from the
seeds per scale graph; a segment scores by the degree-normalised PPR mass of its triples' nodes (raw
PPR concentrates on hubs). That ranking is fused with the lexical and dense lists (`hybrid_search`),
every list bounded by the question's time reference. The cross-scale LLM reranker runs only where the
configured model is capable (`EPISODIC_RERANK`); otherwise the fused order stands.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np
from aws_lambda_powertools import Logger
from pydantic import BaseModel

from worldmm.db.models import MemoryType
from worldmm.db.queries.retrieval import seed_entity_keys
from worldmm.errors import GpuUnavailableError, ModelOutputError
from worldmm.graph.build import GraphKey, UserGraph, key_to_uuid
from worldmm.graph.cache.port import load_graph
from worldmm.graph.ppr import personalized_pagerank
from worldmm.llm.structured import build_request, complete_structured
from worldmm.retrieval.hybrid import hybrid_search
from worldmm.retrieval.models import MemoryKind, RetrievalResult, RetrievedMemory
from worldmm.retrieval.sanitize import sanitize_memory_text
from worldmm.retrieval.timeref import TimeReference, parse_time_reference
from worldmm.scale import SCALES

if TYPE_CHECKING:
    from worldmm.retrieval.port import EpisodicRetrievalPorts

logger = Logger(child=True)


RERANK_PURPOSE = "cross_scale_rerank"
MAX_NAME_WORDS = 4
GRAPH_SPREAD_WEIGHT = 0.5  # PPR's share of a segment's graph score, below one seed's direct mention
_WORDS = re.compile(r"[\w'&-]+")


class RerankResult(BaseModel):
    """The reranker's choice: candidate numbers, most relevant first."""

    selected: list[int]


@dataclass
class _Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, prompt: int, completion: int) -> None:
        self.prompt_tokens += prompt
        self.completion_tokens += completion


def query_names(query: str) -> list[str]:
    """Every run of up to four words of the query, lower-cased, with a naive singular of each."""
    words = [w.lower().strip("'-") for w in _WORDS.findall(query)]
    words = [w for w in words if w]
    names: list[str] = []
    for size in range(1, MAX_NAME_WORDS + 1):
        for start in range(len(words) - size + 1):
            phrase = " ".join(words[start : start + size])
            names.append(phrase)
            if phrase.endswith("s") and len(phrase) > 3:
                names.append(phrase[:-1])
    return list(dict.fromkeys(names))


def query_seed_entities(services: EpisodicRetrievalPorts, user_id: str, query: str) -> list[bytes]:
    """16-byte keys of the canonical entities whose name or alias the query contains."""
    names = query_names(query)
    if not names:
        return []
    with services.db.unit_of_work(user_id) as session:
        return seed_entity_keys(session, user_id, names)


def graph_ranking(
    services: EpisodicRetrievalPorts,
    user_id: str,
    seeds: list[bytes],
    reference: TimeReference,
    scales: list[int],
    pool: int,
) -> list[uuid.UUID]:
    """Segments of `scales` visible under `reference`, ranked by specificity-weighted PPR from the seeds."""
    settings = services.retrieval_settings
    until = reference.until.timestamp()
    since = reference.since.timestamp() if reference.since else None
    per_scale: list[list[uuid.UUID]] = []
    for scale in scales:
        graph = load_graph(services, GraphKey(user_id, MemoryType.EPISODIC, scale))
        seed_nodes = graph.node_indices(seeds)
        if seed_nodes.size == 0:
            continue
        reset = specificity_reset(graph, seed_nodes, settings.seed_hub_fraction)
        if not reset.any():
            continue
        degree = np.maximum(graph.degree, 1.0)
        node_scores = personalized_pagerank(
            graph,
            reset,
            damping=settings.ppr_damping,
            tolerance=settings.ppr_tolerance,
            max_iterations=settings.ppr_max_iterations,
        )
        # Segments that name a seed lead (by the seeds' specificity); PPR (degree-normalised, undoing its
        # pull towards hubs) orders the rest by how close they are to the seeds in the graph.
        direct, spread = graph.segment_scores(np.column_stack((reset, node_scores / degree))).T
        segment_scores = direct + spread / (float(spread.max()) or 1.0) * GRAPH_SPREAD_WEIGHT
        # The best `pool` visible segments (ties by position), sorting only those at or above the pool-th score.
        candidates = np.flatnonzero((segment_scores > 0) & graph.segments_visible(until, since))
        if 0 < pool < candidates.size:
            floor = np.partition(segment_scores[candidates], candidates.size - pool)[candidates.size - pool]
            candidates = candidates[segment_scores[candidates] >= floor]
        best = candidates[np.argsort(-segment_scores[candidates], kind="stable")[:pool]]
        per_scale.append([key_to_uuid(graph.segment_keys[position]) for position in best])
    # PPR masses of different scale graphs are not comparable: interleave the scales by rank.
    interleaved = [ranking[rank] for rank in range(pool) for ranking in per_scale if rank < len(ranking)]
    return interleaved[:pool]


def specificity_reset(graph: UserGraph, seed_nodes: np.ndarray, hub_fraction: float) -> np.ndarray:
    """PPR reset weights: log(N / n) for a seed named in n of the graph's N segments; hubs (in more than
    `hub_fraction` of them, such as the wearer) get none — they would spread to every memory."""
    segments = max(1, graph.segment_keys.shape[0])
    frequency = graph.segment_frequency()[seed_nodes]
    weights = np.log((segments + 1) / (frequency + 0.5))
    weights[frequency > hub_fraction * segments] = 0.0
    reset = np.zeros(graph.node_count)
    reset[seed_nodes] = np.maximum(weights, 0.0)
    return reset


def _describe(memory: RetrievedMemory, number: int, max_chars: int) -> str:
    when = memory.start_time.isoformat(timespec="minutes") if memory.start_time else "unknown time"
    scale = f"{memory.duration_seconds}s" if memory.duration_seconds else "?"
    body = sanitize_memory_text(memory.text, max_chars)
    return f"[{number}] ({scale} segment, {when}) <memory>{body}</memory>"


def rerank(
    services: EpisodicRetrievalPorts, query: str, memories: list[RetrievedMemory], usage: _Usage, k: int
) -> list[RetrievedMemory]:
    """The cross-scale reranker's top picks (raises ModelOutputError if it answers nonsense)."""
    settings = services.retrieval_settings
    request = build_request(
        RERANK_PURPOSE,
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=RerankResult,
        query=sanitize_memory_text(query, settings.memory_text_max_chars),
        k=k,
        candidates="\n".join(_describe(m, i, settings.memory_text_max_chars) for i, m in enumerate(memories, start=1)),
    )
    result, response = complete_structured(services.llm, request, RerankResult)
    usage.add(response.prompt_tokens, response.completion_tokens)
    picked = [memories[n - 1] for n in dict.fromkeys(result.selected) if 1 <= n <= len(memories)]
    if not picked and memories:
        raise ModelOutputError("reranker selected no valid candidate")
    return [m.model_copy(update={"source": "rerank"}) for m in picked[:k]]


def retrieve_episodic(
    services: EpisodicRetrievalPorts,
    user_id: str,
    query: str,
    *,
    now: datetime | None = None,
    limit: int | None = None,
    scales: tuple[int, ...] | None = None,
) -> RetrievalResult:
    """The most relevant episodic memories for `query` as of `now`, across the temporal scales."""
    started = time.perf_counter()
    settings = services.retrieval_settings
    reference = parse_time_reference(query, now or datetime.now(UTC))
    limit = limit or settings.episodic_final_k
    chosen_scales = list(scales or SCALES)
    usage = _Usage()
    seeds = query_seed_entities(services, user_id, query)
    ranking = graph_ranking(services, user_id, seeds, reference, chosen_scales, settings.hybrid_pool) if seeds else []
    use_reranker = settings.episodic_rerank_enabled
    fused = hybrid_search(
        services,
        user_id,
        query,
        reference=reference,
        limit=max(limit, settings.rerank_candidates) if use_reranker else limit,
        graph_ranking=ranking,
        durations=chosen_scales,
    )
    items, reason = fused.items, fused.reason
    if not seeds:
        reason = reason or "no known entities in the query: text and vector search only"
    if use_reranker and len(items) > limit:
        try:
            items = rerank(services, query, items, usage, limit)
        except GpuUnavailableError:
            raise
        except Exception as exc:  # the rerank model failed: the fused order stands
            logger.warning("cross-scale rerank failed, keeping the fused order: %s", exc)
            items, reason = items[:limit], "rerank failed: fused order"
    logger.debug("episodic retrieval took %.1f ms", (time.perf_counter() - started) * 1000)
    if fused.searched:
        reason = f"{reason}; " if reason else ""
        reason += f"searched {fused.searched}"
    return RetrievalResult(
        memory_type=MemoryKind.EPISODIC,
        query=query,
        items=items[:limit],
        reason=reason,
        searched=fused.searched,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        said=fused.said,
    )
