"""Hybrid segment search (spec 002 "Layer 6", relevance first): BM25 + vector + graph, fused, deduplicated.

Two scored lists — BM25 over the user's segments (term rarity from the user's own memories, see
`lexical`) and cosine over caption embeddings — are fused by their scores, each standardised over its
candidates (a z-score, so a leg that is sure of its best candidate weighs more than one that is
not; Reciprocal Rank Fusion threw that away and fell below BM25 alone at R@1 on LoCoMo). A graph (PPR)
ranking, when the caller has one, adds a bounded boost by rank. Near-duplicates of a better candidate are
dropped (Maximal Marginal Relevance traded evidence for variety and fell below RRF at R@10 on EgoLife).

Time never overrides relevance: there is no blanket decay. Every list is "as of" the question's time
reference — nothing that ends after it was asked, and only the range it names ("yesterday morning")
when it names one — and the direction it looks in ("the last time", "first") only breaks near-ties.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from worldmm.db.queries import search
from worldmm.memory.episodic.segment_text import segment_memory_text
from worldmm.retrieval.lexical import SegmentIndex, query_lexemes, segment_indexes
from worldmm.retrieval.models import MemoryKind, RetrievalResult, RetrievedMemory
from worldmm.retrieval.timeref import TimeFocus, TimeReference, parse_time_reference
from worldmm.retrieval.vocabulary import Vocabulary
from worldmm.scale import SCALES

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from worldmm.retrieval.port import HybridPorts
    from worldmm.retrieval.settings import RetrievalSettings

K = TypeVar("K", bound=Hashable)


_WORD = re.compile(r"[A-Za-z0-9']+")
SHORTLIST_MIN = 20  # near-duplicates are dropped from the best 2 × limit candidates, at least this many
# The user's rows in range are scanned exactly instead of walking the shared HNSW index when they are few
# (rows × dimensions up to EXACT_SCAN_MAX_FLOATS) and a small share of the table: the walk then mostly
# skips other users' rows (bench.bench_vector_search, 200k rows, 384-d, 2 cores: 1,000 rows a user
# (0.5 %) exact p50 2.3 ms vs HNSW iterative 12 ms; 10,000 rows (5 %) 18 ms vs 22 ms, recall@10 1.0 vs
# 0.98). When the user owns most of the index the walk wins (the EgoLife week, 6,223 windows of 7,512
# rows: HNSW p50 8 ms vs exact 25 ms, same top 20).
EXACT_SCAN_MAX_FLOATS = 4_000_000
EXACT_SCAN_MAX_SHARE = 0.25


@dataclass(frozen=True)
class SegmentRow:
    """What fusion and diversification need of a candidate segment."""

    id: uuid.UUID
    text: str
    start_time: datetime
    end_time: datetime
    duration_seconds: int
    embedding: np.ndarray | None


@dataclass(frozen=True)
class SegmentRankings:
    """The ranked candidate lists of one query, best first, each already bounded in time, with their scores
    (BM25; cosine similarity)."""

    lexical: list[uuid.UUID]
    dense: list[uuid.UUID]
    lexical_scores: list[float]
    dense_scores: list[float]
    said: Vocabulary
    """Every stem the user's segments say: the lexical index's vocabulary."""

    @classmethod
    def of(cls, lexical: list[tuple[uuid.UUID, float]], dense: Sequence[Any], said: Vocabulary) -> SegmentRankings:
        """From (id, BM25) pairs, the vector query's (id, distance) rows and the lexical index's vocabulary."""
        return cls(
            lexical=[i for i, _ in lexical],
            dense=[row.id for row in dense],
            lexical_scores=[score for _, score in lexical],
            dense_scores=[1.0 - float(row.distance) for row in dense],
            said=said,
        )


def rrf_fuse(ranked_lists: Sequence[Sequence[K]], k: int, weights: Sequence[float] | None = None) -> dict[K, float]:
    """Weighted Reciprocal Rank Fusion: score(item) = Σ w / (k + rank), ranks from 1, over the lists holding it."""
    scores: dict[K, float] = {}
    for position, ranking in enumerate(ranked_lists):
        weight = 1.0 if weights is None else weights[position]
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


@dataclass(frozen=True)
class ScoredLeg(Generic[K]):
    """One leg's candidates, best first, their scores, and the score of a candidate it did not return (BM25:
    0, the true score of a segment without the query's words; cosine: the lowest it returned, a bound)."""

    ranking: Sequence[K]
    scores: Sequence[float]
    unreturned: float


def score_fuse(legs: Sequence[ScoredLeg[K]], weights: Sequence[float]) -> dict[K, float]:
    """Calibrated score fusion over the union of the legs' candidates: each leg's scores there (its
    `unreturned` score where it did not return one) standardised to mean 0 and deviation 1, then summed
    with `weights`. A leg sure of its best (a wide gap) moves the result more than an unsure one."""
    union = list(dict.fromkeys(item for leg in legs for item in leg.ranking))
    fused = np.zeros(len(union))
    for leg, weight in zip(legs, weights, strict=True):
        if not leg.ranking or weight == 0:
            continue
        given = dict(zip(leg.ranking, leg.scores, strict=True))
        values = np.array([given.get(item, leg.unreturned) for item in union], dtype=np.float64)
        fused += weight * (values - values.mean()) / (values.std() or 1.0)
    return dict(zip(union, fused.tolist(), strict=True))


def rank_boost(ranking: Sequence[K], k: int, ceiling: float) -> dict[K, float]:
    """A bounded boost by rank: `ceiling` for the first, ceiling·(k+1)/(k+rank) after (RRF's shape)."""
    return rrf_fuse([ranking], k, [ceiling * (k + 1)])


def _jaccard(a: str, b: str) -> float:
    wa = {w.lower() for w in _WORD.findall(a)}
    wb = {w.lower() for w in _WORD.findall(b)}
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def drop_near_duplicates(order: Sequence[K], similarity: np.ndarray, threshold: float, k: int) -> list[K]:
    """The first `k` of `order` (best first), a candidate at least `threshold` similar to one kept before it
    moved behind all the others (so `k` are still returned when there are that many).

    `similarity` is the candidates' pairwise similarity matrix in `order`'s order. Unlike MMR this never
    trades relevance for variety: measured on EgoLife, MMR (λ 0.7) pushed evidence windows out of the top
    10 for their likeness to their neighbours.
    """
    kept: list[int] = []
    duplicates: list[int] = []
    for position in range(len(order)):
        if len(kept) == k:
            break
        if kept and float(similarity[position, kept].max()) >= threshold:
            duplicates.append(position)
        else:
            kept.append(position)
    return [order[i] for i in (kept + duplicates)[:k]]


def similarity_matrix(rows: Sequence[SegmentRow]) -> np.ndarray:
    """Pairwise similarity in [0, 1]: cosine of embeddings where both have one, word Jaccard otherwise."""
    n = len(rows)
    matrix = np.zeros((n, n))
    embedded = [i for i, r in enumerate(rows) if r.embedding is not None]
    if embedded:
        vectors = np.stack([rows[i].embedding for i in embedded])  # type: ignore[misc]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = vectors / np.where(norms == 0, 1.0, norms)
        matrix[np.ix_(embedded, embedded)] = np.clip(unit @ unit.T, 0.0, 1.0)
    for i in (i for i, r in enumerate(rows) if r.embedding is None):
        for j in range(n):
            if j != i:
                matrix[i, j] = matrix[j, i] = _jaccard(rows[i].text, rows[j].text)
    return matrix


def time_order_bonus(rows: dict[uuid.UUID, SegmentRow], focus: TimeFocus, scale: float) -> dict[uuid.UUID, float]:
    """A tie-break in [0, scale]: later candidates score more for RECENT, earlier ones for EARLIEST."""
    if focus == TimeFocus.NONE or len(rows) < 2:
        return dict.fromkeys(rows, 0.0)
    ordered = sorted(rows, key=lambda i: (rows[i].end_time, i), reverse=focus == TimeFocus.RECENT)
    return {item: scale * (1.0 - position / (len(ordered) - 1)) for position, item in enumerate(ordered)}


def _epoch(moment: datetime | None) -> float | None:
    return moment.timestamp() if moment is not None else None


def rank_segments(
    services: HybridPorts,
    session: Session,
    user_id: str,
    query: str,
    embedding: list[float],
    reference: TimeReference,
    durations: list[int],
    pool: int,
) -> SegmentRankings:
    """The BM25 and dense rankings of the segments of `durations` visible under `reference`, `pool` each."""
    generation, lexemes = query_lexemes(session, user_id, query)
    index: SegmentIndex = segment_indexes.get(session, user_id, generation, store=services.graph_cache)
    mask = index.visible(durations, reference.until.timestamp(), _epoch(reference.since))
    lexical: list[tuple[uuid.UUID, float]] = []
    if lexemes and index.size:
        scores = index.bm25(lexemes, mask)
        candidates = np.flatnonzero(mask & (scores > 0))
        best = candidates[np.argsort(-scores[candidates], kind="stable")[:pool]]
        lexical = [(index.ids[i], float(scores[i])) for i in best]
    query_vector = search.CaptionVectorQuery(user_id, embedding, durations, reference.until, reference.since, pool)
    visible = int(mask.sum())
    if _prefer_exact_scan(session, visible, services.retrieval_settings.embedding_dim):
        # A user with few rows in range: reading them all is faster than the index walk, and exact.
        return SegmentRankings.of(lexical, search.nearest_segments_exact(session, query_vector), index.said)
    ef_search = str(max(services.retrieval_settings.hnsw_ef_search, pool))
    dense = search.nearest_segments_walked(session, query_vector, ef_search)
    if len(dense) < min(pool, visible):
        dense = search.nearest_segments_exact(session, query_vector)
    return SegmentRankings.of(lexical, dense, index.said)


def _prefer_exact_scan(session: Session, visible: int, dim: int) -> bool:
    """Whether to read the user's `visible` rows exactly rather than walk the HNSW index (see above)."""
    if visible * dim > EXACT_SCAN_MAX_FLOATS:
        return False
    table_rows = search.segment_table_rows(session)  # the planner's estimate
    return table_rows <= 0 or visible <= EXACT_SCAN_MAX_SHARE * table_rows


def load_rows(session: Session, user_id: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, SegmentRow]:
    """The candidates' text, times and embeddings."""
    rows: dict[uuid.UUID, SegmentRow] = {}
    for r in search.candidate_rows(session, user_id, ids):
        body = segment_memory_text(r.caption, r.transcript)
        if not body:
            continue
        # pgvector's binary form (int16 dimensions, int16 unused, big-endian float4s): parsing 1536 floats
        # of text per candidate cost ~16 ms a query.
        embedding = np.frombuffer(r.embedding, dtype=">f4", offset=4).astype(np.float32) if r.embedding else None
        rows[r.id] = SegmentRow(r.id, body, r.start_time, r.end_time, r.duration_seconds, embedding)
    return rows


def hybrid_search(
    services: HybridPorts,
    user_id: str,
    query: str,
    *,
    now: datetime | None = None,
    limit: int | None = None,
    graph_ranking: Sequence[uuid.UUID] = (),
    durations: Sequence[int] | None = None,
    reason: str | None = None,
    reference: TimeReference | None = None,
    diversify: bool = True,
) -> RetrievalResult:
    """Segments for `query` by fused BM25 and vector scores (and a graph boost), as of `now` (or `reference`)."""
    settings = services.retrieval_settings
    reference = reference or parse_time_reference(query, now or datetime.now(UTC))
    limit = max(1, limit or settings.hybrid_top_k)
    scales = list(durations or SCALES)
    pool = max(settings.hybrid_pool, limit)
    [query_embedding] = services.embedder.embed([query])

    with services.db.unit_of_work(user_id) as session:
        rankings = rank_segments(services, session, user_id, query, query_embedding, reference, scales, pool)
        if reference.since is not None and not (rankings.lexical or rankings.dense):
            reason = reason or f"nothing in {reference.describe()}; searched everything before it was asked"
            reference = reference.unbounded()
            rankings = rank_segments(services, session, user_id, query, query_embedding, reference, scales, pool)
        fused = _fuse(settings, rankings, list(graph_ranking)[:pool])
        shortlist = sorted(fused, key=lambda i: (-fused[i], i))[: max(2 * limit, SHORTLIST_MIN)]
        rows = load_rows(session, user_id, shortlist)

    chosen, relevance = _choose(settings, rows, fused, reference.focus, limit, diversify=diversify)
    items = [_segment_memory(rows[segment_id], relevance[segment_id], "hybrid") for segment_id in chosen]
    if not items and reason is None:
        reason = "no matching memories" + (f" in {reference.describe()}" if reference.since else "")
    searched = reference.describe() if reference.since is not None else None
    return RetrievalResult(
        memory_type=MemoryKind.EPISODIC, query=query, items=items, reason=reason, searched=searched, said=rankings.said
    )


def _fuse(settings: RetrievalSettings, rankings: SegmentRankings, graph: list[uuid.UUID]) -> dict[uuid.UUID, float]:
    """The candidates' fused BM25 and vector scores, boosted by their rank in `graph` (the graph's ranking alone
    when text and vector search found nothing)."""
    fused = score_fuse(
        [
            ScoredLeg(rankings.lexical, rankings.lexical_scores, 0.0),
            ScoredLeg(rankings.dense, rankings.dense_scores, min(rankings.dense_scores, default=0.0)),
        ],
        [settings.fusion_weight_lexical, settings.fusion_weight_dense],
    )
    if graph and fused:
        # The graph only reorders what text and vector search found: a boost of at most its weight.
        boost = rank_boost(graph, settings.rrf_k, settings.fusion_weight_graph)
        return {i: score + boost.get(i, 0.0) for i, score in fused.items()}
    if graph:
        return rank_boost(graph, settings.rrf_k, 1.0)
    return fused


def _choose(
    settings: RetrievalSettings,
    rows: dict[uuid.UUID, SegmentRow],
    fused: dict[uuid.UUID, float],
    focus: TimeFocus,
    limit: int,
    *,
    diversify: bool,
) -> tuple[list[uuid.UUID], dict[uuid.UUID, float]]:
    """The best `limit` of the loaded candidates (near-duplicates moved back when `diversify`), and each one's
    relevance: its fused score above the lowest, plus the time-order tie-break."""
    bonus = time_order_bonus(rows, focus, settings.time_tiebreak)
    lowest = min((fused[i] for i in rows), default=0.0)
    relevance = {i: fused[i] - lowest + bonus[i] for i in rows}  # shown as the score: ≥ 0
    # On equal relevance the finer memory goes first: a window states what a summary paraphrases.
    order = sorted(relevance, key=lambda i: (-relevance[i], rows[i].duration_seconds, i))
    if diversify:
        similarity = similarity_matrix([rows[i] for i in order])
        return drop_near_duplicates(order, similarity, settings.duplicate_similarity, limit), relevance
    return order[:limit], relevance


def _segment_memory(row: SegmentRow, score: float, source: str) -> RetrievedMemory:
    """A loaded segment as an episodic memory found by `source`."""
    return RetrievedMemory(
        id=str(row.id),
        memory_type=MemoryKind.EPISODIC,
        text=row.text,
        score=score,
        source=source,
        start_time=row.start_time,
        end_time=row.end_time,
        duration_seconds=row.duration_seconds,
        segment_id=str(row.id),
    )


WINDOWS_IN_LIMIT = 240
"""The most 30-second windows read for a question over a span ("Who did I talk to this morning?"): two hours."""


def windows_in(services: HybridPorts, user_id: str, reference: TimeReference) -> list[RetrievedMemory]:
    """The newest `WINDOWS_IN_LIMIT` 30-second windows in `reference`'s range, oldest first: everything heard
    then, for a question about all of it rather than the few windows a search ranks best."""
    return _windows_selected(
        services, user_id,
        lambda session: search.window_ids_in(session, user_id, reference.until, reference.since, WINDOWS_IN_LIMIT),
    )  # fmt: skip


def windows_within(services: HybridPorts, user_id: str, summary: RetrievedMemory) -> list[RetrievedMemory]:
    """The 30-second windows that `summary` spans, oldest first (none for a memory without a span)."""
    since, until = summary.start_time, summary.end_time
    if since is None or until is None:
        return []
    return _windows_selected(
        services, user_id, lambda session: search.window_ids_within(session, user_id, since, until)
    )


def _windows_selected(
    services: HybridPorts, user_id: str, select_ids: Callable[[Session], list[uuid.UUID]]
) -> list[RetrievedMemory]:
    """The 30-second windows whose ids `select_ids` reads, oldest first."""
    with services.db.unit_of_work(user_id) as session:
        ids = select_ids(session)
        rows = load_rows(session, user_id, ids) if ids else {}
    return _as_windows(rows.values())


def _as_windows(rows: Iterable[SegmentRow]) -> list[RetrievedMemory]:
    return [_segment_memory(row, 0.0, "adjacent") for row in sorted(rows, key=lambda r: r.start_time)]


def adjacent_windows(services: HybridPorts, user_id: str, memories: Sequence[RetrievedMemory]) -> list[RetrievedMemory]:
    """The 30-second windows just before and just after each retrieved 30-second window, not retrieved
    themselves: what was said around a sentence ("What did I do after leaving the cafe?" is answered in the
    next window). Empty when there is no retrieved window or the database cannot say."""
    windows = [m for m in memories if m.duration_seconds == 30 and m.start_time and m.end_time]
    if not windows:
        return []
    have = {m.segment_id or m.id for m in windows}
    starts = [m.start_time for m in windows if m.start_time]
    ends = [m.end_time for m in windows if m.end_time]  # every window has both
    with services.db.unit_of_work(user_id) as session:
        ids = [i for i in search.adjacent_window_ids(session, user_id, starts, ends) if str(i) not in have]
        rows = load_rows(session, user_id, ids) if ids else {}
    return _as_windows(rows.values())
