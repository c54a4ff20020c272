"""The read side's queries: nearest visual windows, query seeds, BM25 postings, semantic seeds and facts,
caption sources."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.orm import Session

from worldmm.db.queries import vector_literal
from worldmm.db.queries.graph import ENTITY_KEY_SQL, LITERAL_KEY_SQL

# Exact per-user scan (a filtered HNSW scan may stop before it finds k of this user's rows).
NEAREST_VISUAL_SQL = """
WITH candidates AS MATERIALIZED (
    SELECT v.segment_id, v.embedding <=> CAST(:embedding AS halfvec) AS distance
    FROM worldmm_visual_embeddings v JOIN worldmm_segments s ON s.id = v.segment_id
    WHERE v.user_id = :user_id AND s.end_time <= :until
), nearest AS (
    SELECT * FROM candidates ORDER BY distance, segment_id LIMIT :k
)
SELECT s.id, s.session_id, s.window_index, s.caption, s.transcript, s.start_time, s.end_time,
       s.duration_seconds, s.s3_frames_key, n.distance
FROM nearest n JOIN worldmm_segments s ON s.id = n.segment_id
ORDER BY n.distance, s.id
"""

# Names and aliases are matched exactly (lower-cased) on the unique (user_id, lower(surface_form)) index.
_SEED_ENTITIES_SQL = """
SELECT DISTINCT uuid_send(coalesce(e.canonical_entity_id, e.id)) AS key
FROM worldmm_entities e
WHERE e.user_id = :user_id AND lower(e.surface_form) = ANY(:names)
"""

# Bumped by triggers (migration 0005) whenever a segment's text or times change.
_SEGMENT_GENERATION_SQL = """
SELECT coalesce((SELECT generation FROM worldmm_segment_generations WHERE user_id = :user_id), 0)
"""

_POSTINGS_SQL = """
SELECT s.id, s.duration_seconds,
       extract(epoch FROM s.start_time)::float8 AS start_s, extract(epoch FROM s.end_time)::float8 AS end_s,
       coalesce(array_agg(t.lexeme) FILTER (WHERE t.lexeme IS NOT NULL), '{}') AS lexemes,
       coalesce(array_agg(cardinality(t.positions)) FILTER (WHERE t.lexeme IS NOT NULL), '{}') AS counts
FROM worldmm_segments s
LEFT JOIN LATERAL unnest(s.search_tsv) AS t(lexeme, positions, weights) ON true
WHERE s.user_id = :user_id AND (s.caption IS NOT NULL OR s.transcript IS NOT NULL)
GROUP BY s.id
ORDER BY s.end_time, s.id
"""

# One round trip per query: the user's segment generation and the query's lexemes.
_QUERY_LEXEMES_SQL = """
SELECT coalesce((SELECT generation FROM worldmm_segment_generations WHERE user_id = :user_id), 0) AS generation,
       array(SELECT lexeme FROM unnest(to_tsvector('english', :query)) AS t(lexeme, positions, weights)) AS lexemes
"""

# Exact per-user scan of valid semantic triples (a filtered HNSW scan may return too few of them); the seeds are
# the graph's node keys of their subjects and objects.
SEMANTIC_SEED_SQL = f"""
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

_SEMANTIC_TRIPLES_SQL = """
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

# A summary's caption source: the distinct sources of the 30 s windows it spans ("heard+seen").
_CAPTION_SOURCES_SQL = """
SELECT s.id::text AS id, coalesce(s.caption_source, (
    SELECT string_agg(DISTINCT w.caption_source, '+' ORDER BY w.caption_source) FROM worldmm_segments w
    WHERE w.user_id = s.user_id AND w.duration_seconds = 30 AND w.caption_source IS NOT NULL
      AND w.start_time >= s.start_time AND w.end_time <= s.end_time)) AS source
FROM worldmm_segments s WHERE s.user_id = :user_id AND s.id = ANY(CAST(:ids AS uuid[]))
"""


def nearest_visual_segments(
    session: Session, user_id: str, embedding: list[float], k: int, until: datetime
) -> Sequence[Row[Any]]:
    """The k segments ended by `until` whose clip embedding is nearest (cosine) to `embedding`, nearest first."""
    params = {"embedding": vector_literal(embedding), "user_id": user_id, "k": k, "until": until}
    return session.execute(text(NEAREST_VISUAL_SQL), params).all()


def seed_entity_keys(session: Session, user_id: str, names: list[str]) -> list[bytes]:
    """16-byte keys of the canonical entities with a surface form (lower-cased) among `names`."""
    rows = session.execute(text(_SEED_ENTITIES_SQL), {"user_id": user_id, "names": names}).scalars()
    return [bytes(k) for k in rows]


def segment_generation(session: Session, user_id: str) -> int:
    """The user's segment generation (0 before their first segment)."""
    return int(session.execute(text(_SEGMENT_GENERATION_SQL), {"user_id": user_id}).scalar_one())


def segment_postings(session: Session, user_id: str) -> Iterable[Row[Any]]:
    """Each segment with text of the user, by end time: id, duration, start_s, end_s, lexemes, counts."""
    return session.execute(text(_POSTINGS_SQL), {"user_id": user_id})


def query_lexemes(session: Session, user_id: str, query: str) -> tuple[int, list[str]]:
    """The user's segment generation, and the query's stemmed, stop-word-free lexemes (as the segments')."""
    row = session.execute(text(_QUERY_LEXEMES_SQL), {"user_id": user_id, "query": query}).one()
    return int(row.generation), list(row.lexemes)


def semantic_seed_keys(
    session: Session, user_id: str, embedding: list[float], k: int, until: datetime
) -> Sequence[Row[Any]]:
    """Graph keys (subject_key, object_key) of the k valid semantic triples nearest (cosine) to `embedding`."""
    params = {"embedding": vector_literal(embedding), "user_id": user_id, "k": k, "until": until}
    return session.execute(text(SEMANTIC_SEED_SQL), params).all()


def semantic_triples(
    session: Session, user_id: str, ids: list[uuid.UUID], until: datetime
) -> dict[uuid.UUID, Row[Any]]:
    """Of `ids`, the user's semantic triples valid and known by `until`, with canonical names, by id."""
    params = {"user_id": user_id, "ids": ids, "until": until}
    return {r.id: r for r in session.execute(text(_SEMANTIC_TRIPLES_SQL), params)}


def caption_sources(session: Session, user_id: str, ids: list[str]) -> dict[str, str | None]:
    """Where each of the user's segments `ids` got its caption (a summary: its windows' sources joined)."""
    rows = session.execute(text(_CAPTION_SOURCES_SQL), {"user_id": user_id, "ids": ids}).all()
    return {row.id: row.source for row in rows}
