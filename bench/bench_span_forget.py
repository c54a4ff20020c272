"""Span forget at N days of one user's memory: DELETE /memories of one hour, timed through the application role.

Fills an embedded PostgreSQL (as the owner, in SQL) with `days` days of one user's memory, one session a day:

- every 30 s window and its 3 min, 10 min and 1 h summaries (2,880 + 480 + 144 + 24 rows a day);
- per window two episodic triples, one naming a shared entity (a pool of 2,000) and one naming an entity
  of its own (so a span erase has entities to find orphaned); per 10 min summary one semantic triple and
  one consolidation-history row;
- for the erased hours and an hour either side: text embeddings on their triples (384 dims) and a visual
  embedding per window (1,536 dims) — elsewhere those columns stay empty to keep the fill short (HNSW
  inserts dominate it);

and `--others` more users of the same size. The erased hours' windows have their frames and audio in a
local object directory (10 frames and a .wav each) and the user has graph and lexical keys in a real
Redis. Then it times `forget_span` (what DELETE /memories calls) for:

- aligned: 12:00-13:00 of day `days // 2`: its 1 h, 10 min and 3 min summaries go with it;
- offset: 12:30:15-13:30:15 of the next day: summaries at both edges are emptied for re-summarising;
- again: the aligned hour a second time (idempotent: nothing left to erase).

Prints one JSON object and writes it to `--out`.

    python -m bench.bench_span_forget --days 90
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.report import machine, write_result

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WINDOWS_A_DAY = 2880
FRAMES = 10
SHARED_ENTITIES = 2000

_SEGMENTS = """
INSERT INTO worldmm_segments (id, user_id, session_id, window_index, duration_seconds, start_time, end_time,
                              caption, transcript, caption_source, processing_status, s3_frames_key)
SELECT gen_random_uuid(), %(user)s::varchar, 'bench-d' || (i * {scale} / 86400),
       (i * {scale} %% 86400) / {scale}, {scale},
       %(t0)s::timestamptz + i * interval '{scale} seconds', %(t0)s::timestamptz + (i + 1) * interval '{scale} seconds',
       'caption ' || i, CASE WHEN {scale} = 30 THEN 'Kate says ' || i END, 'heard', 'complete',
       CASE WHEN {scale} = 30
            THEN 'sessions/bench-d' || (i * 30 / 86400) || '/window_' || ((i * 30 %% 86400) / 30) || '/' END
FROM generate_series(0, %(n)s - 1) AS i
"""
_SHARED = """
INSERT INTO worldmm_entities (id, user_id, surface_form, canonical_name)
SELECT gen_random_uuid(), %(user)s::varchar, 'shared ' || k, 'shared ' || k FROM generate_series(0, {n} - 1) AS k
"""
_OWN = """
INSERT INTO worldmm_entities (id, user_id, surface_form, canonical_name)
SELECT md5('own' || s.id::text)::uuid, %(user)s::varchar, 'seen ' || s.id, 'seen ' || s.id
FROM worldmm_segments s WHERE s.user_id = %(user)s::varchar AND s.duration_seconds = 30
"""
_EPISODIC = """
WITH me AS (SELECT id FROM worldmm_entities WHERE user_id = %(user)s::varchar AND surface_form = 'shared 0'),
     pool AS (SELECT id, row_number() OVER (ORDER BY id) - 1 AS k FROM worldmm_entities
              WHERE user_id = %(user)s::varchar AND surface_form LIKE 'shared %%')
INSERT INTO worldmm_triples (id, segment_id, user_id, memory_type, subject_entity_id, predicate, object_entity_id,
                             valid_at)
SELECT gen_random_uuid(), s.id, s.user_id, 'episodic'::worldmm_memory_type, (SELECT id FROM me), 'talks with',
       p.id, s.start_time
FROM worldmm_segments s JOIN pool p ON p.k = s.window_index %% {n}
WHERE s.user_id = %(user)s::varchar AND s.duration_seconds = 30
UNION ALL
SELECT gen_random_uuid(), s.id, s.user_id, 'episodic'::worldmm_memory_type, (SELECT id FROM me), 'sees',
       md5('own' || s.id::text)::uuid, s.start_time
FROM worldmm_segments s
WHERE s.user_id = %(user)s::varchar AND s.duration_seconds = 30
"""
_SEMANTIC = """
WITH me AS (SELECT id FROM worldmm_entities WHERE user_id = %(user)s::varchar AND surface_form = 'shared 0')
INSERT INTO worldmm_triples (id, segment_id, user_id, memory_type, subject_entity_id, predicate, object_literal,
                             valid_at)
SELECT gen_random_uuid(), s.id, s.user_id, 'semantic'::worldmm_memory_type, (SELECT id FROM me), 'often',
       'habit ' || s.window_index, s.start_time
FROM worldmm_segments s WHERE s.user_id = %(user)s::varchar AND s.duration_seconds = 600
"""
_HISTORY = """
INSERT INTO worldmm_memory_history (id, user_id, segment_id, triple_id, event, mode, applied, inputs)
SELECT gen_random_uuid(), t.user_id, t.segment_id, t.id, 'ADD', 'apply', true,
       jsonb_build_object('text', 'habit of ' || t.object_literal)
FROM worldmm_triples t WHERE t.user_id = %(user)s::varchar AND t.memory_type = 'semantic'
"""
_EMBED = """
UPDATE worldmm_triples t SET embedding = (SELECT array_agg(random())::real[] FROM generate_series(1, {dim}))::vector
FROM worldmm_segments s
WHERE s.id = t.segment_id AND s.user_id = %(user)s::varchar AND s.start_time >= %(a)s AND s.start_time < %(b)s
"""
_VISUAL = """
INSERT INTO worldmm_visual_embeddings (id, segment_id, user_id, embedding, model, timestamp)
SELECT gen_random_uuid(), s.id, s.user_id,
       (SELECT array_agg(random())::real[] FROM generate_series(1, {dim}))::vector, 'bench', s.start_time
FROM worldmm_segments s
WHERE s.user_id = %(user)s::varchar AND s.duration_seconds = 30 AND s.start_time >= %(a)s AND s.start_time < %(b)s
"""


def _fill(
    admin_url: str, users: list[str], days: int, rich: list[tuple[datetime, datetime]], dims: tuple[int, int]
) -> dict[str, int]:
    import psycopg

    with psycopg.connect(admin_url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        for user in users:
            p = {"user": user, "t0": T0}
            for scale in (30, 180, 600, 3600):
                conn.execute(_SEGMENTS.format(scale=scale), p | {"n": days * 86400 // scale})
            conn.execute("ANALYZE worldmm_segments")
            conn.execute(_SHARED.format(n=SHARED_ENTITIES), p)
            conn.execute(_OWN, p)
            conn.execute(_EPISODIC.format(n=SHARED_ENTITIES), p)
            conn.execute(_SEMANTIC, p)
            conn.execute(_HISTORY, p)
            for a, b in rich:
                span = {"a": a - timedelta(hours=1), "b": b + timedelta(hours=1)}
                conn.execute(_EMBED.format(dim=dims[0]), p | span)
                conn.execute(_VISUAL.format(dim=dims[1]), p | span)
        conn.execute("ANALYZE")
        counts = {}
        for table in (
            "worldmm_segments",
            "worldmm_entities",
            "worldmm_triples",
            "worldmm_visual_embeddings",
            "worldmm_memory_history",
        ):
            counts[table] = int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[index]
        return counts


def _objects(store: Any, user: str, day: int, start: datetime, end: datetime) -> int:
    """The session's catalog entry and the frames and audio of every window of [start, end)."""
    created = T0 + timedelta(days=day)
    sid = f"bench-d{day}"
    store.put(
        f"sessions/{sid}/metadata.json",
        json.dumps({"sessionId": sid, "userId": user, "createdAt": created.isoformat()}).encode(),
    )
    first = int((start - created).total_seconds()) // 30
    last = int((end - created).total_seconds() + 29) // 30
    n = 0
    for index in range(first, last):
        for f in range(FRAMES):
            store.put(f"sessions/{sid}/window_{index}/frame_{f:04d}.jpg", b"\xff\xd8" + os.urandom(2048))
            n += 1
        store.put(f"sessions/{sid}/window_{index}/audio.wav", b"RIFF" + os.urandom(4096))
        n += 1
    return n


def run(days: int, others: int) -> dict[str, Any]:
    import redis

    from tests.support.harness import embedded_postgres, make_settings, redis_server
    from worldmm.db.engine import Database
    from worldmm.llm.scripted import ScriptedLLM
    from worldmm.media.objects import DirectoryObjectStore
    from worldmm.memory.embedding.hashing import HashEmbedder
    from worldmm.services import Services
    from worldmm.timeline.forget_span import SpanTarget, forget_span

    base = make_settings()
    user = "bench-user"
    day = days // 2
    hours = {
        "aligned": (T0 + timedelta(days=day, hours=12), T0 + timedelta(days=day, hours=13)),
        "offset": (
            T0 + timedelta(days=day + 1, hours=12, minutes=30, seconds=15),
            T0 + timedelta(days=day + 1, hours=13, minutes=30, seconds=15),
        ),
    }
    with embedded_postgres(base) as local, redis_server() as redis_url:
        started = time.perf_counter()
        rows = _fill(
            local.admin_url,
            [user, *[f"other-{i}" for i in range(others)]],
            days,
            list(hours.values()),
            (base.embedding_dim, base.visual_embedding_dim),
        )
        fill_s = time.perf_counter() - started
        settings = base.model_copy(update={"database_url": local.app_url, "redis_url": redis_url})
        store = DirectoryObjectStore(Path(tempfile.mkdtemp(prefix="worldmm-bench-span-")))
        services = Services(
            settings,
            db=Database(local.app_url),
            llm=ScriptedLLM(),
            embedder=HashEmbedder(settings.embedding_dim),
            store=store,
        )
        objects = {name: _objects(store, user, (a - T0).days, a, b) for name, (a, b) in hours.items()}
        cache = redis.Redis.from_url(redis_url)
        results: dict[str, Any] = {}
        for name, (a, b) in [*hours.items(), ("again", hours["aligned"])]:
            for rest in ("semantic", "episodic", "episodic:30", "lexical", "semantic:gen"):
                cache.set(f"worldmm:graph:{user}:{rest}", b"x" * 1024)
            began = time.perf_counter()
            report = forget_span(services, user, SpanTarget(a, b), requested_by="bench")
            seconds = time.perf_counter() - began
            results[name] = {"seconds": round(seconds, 3), "deleted": dict(sorted(report.deleted.items()))}
        cache.close()
    return {
        "benchmark": "span_forget",
        "days": days,
        "rows_all_users": rows,
        "other_users": others,
        "objects_in_each_hour": objects,
        "fill_s": round(fill_s, 1),
        "span_forget": results,
        "target": "a one-hour span delete of a 90-day memory completes in <= 5 s locally (issue 25)",
        "machine": machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--others", type=int, default=0, help="other users with the same amount of memory")
    parser.add_argument("--out", type=Path, default=Path("bench/results/span_forget.json"))
    args = parser.parse_args(argv)
    result = run(args.days, args.others)
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
