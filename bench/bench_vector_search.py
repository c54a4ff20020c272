"""Per-user caption vector search across many users: which plan answers a user's top-10 fastest, and how exactly.

One table of `users x rows_per_user` unit vectors (clustered: each the normalised sum of three of 256 random
directions, made in SQL) with the columns the retrieval query filters on, queried the way
`worldmm.retrieval.hybrid` does (one user, nearest 10 by cosine). Plans, each on its own copy of the rows:

- hnsw_iterative: one HNSW index over every user's rows, pgvector's iterative scan (relaxed order) walking
  on until 10 rows of the user pass the filter (the schema's index and hybrid.py's query).
- exact_user_rows: no vector index; the user's rows by the (user_id, ...) b-tree, every distance computed.
- hnsw_partitioned: the table hash-partitioned by user (16 partitions), an HNSW index per partition, the same
  iterative scan on the user's partition only.

Recall@10 is against the exact top-10 of the user's rows. Prints one JSON object.

    python -m bench.bench_vector_search --users 100 --rows-per-user 2000 --dim 384 --queries 40
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from worldmm.db.local import start_local_database

_BASIS = """
CREATE TABLE bench_basis AS
SELECT k, ARRAY(SELECT (random() - 0.5)::real FROM generate_series(1, {dim}) WHERE k IS NOT NULL)::vector({dim}) AS v
FROM generate_series(0, 255) AS k
"""
_ROWS = """
CREATE TABLE {table} (
    id bigint NOT NULL, user_id varchar(128) NOT NULL, duration_seconds int NOT NULL,
    end_time timestamptz NOT NULL, caption_embedding vector({dim})
) {partition}
"""
_FILL = """
INSERT INTO {table}
SELECT i, 'user-' || (i % {users}), 30, timestamptz '2026-01-01' + i * interval '1 second',
       l2_normalize(b1.v + b2.v + b3.v)
FROM generate_series(0, {total} - 1) AS i
JOIN bench_basis b1 ON b1.k = (hashint4(i) & 255)
JOIN bench_basis b2 ON b2.k = ((hashint4(i) >> 8) & 255)
JOIN bench_basis b3 ON b3.k = ((hashint4(i) >> 16) & 255)
"""
_QUERY_HNSW = """
WITH candidates AS MATERIALIZED (
    SELECT id, caption_embedding <=> %(q)s::vector AS distance FROM {table}
    WHERE user_id = %(u)s AND duration_seconds = ANY(%(d)s) AND end_time <= %(until)s
    ORDER BY caption_embedding <=> %(q)s::vector LIMIT 10
)
SELECT id FROM candidates ORDER BY distance, id
"""
_QUERY_EXACT = """
SELECT id FROM {table}
WHERE user_id = %(u)s AND duration_seconds = ANY(%(d)s) AND end_time <= %(until)s
ORDER BY (caption_embedding <=> %(q)s::vector) + 0, id LIMIT 10
"""
PLANS = {
    "hnsw_iterative": ("bench_global", "", _QUERY_HNSW),
    "exact_user_rows": ("bench_exact", "", _QUERY_EXACT),
    "hnsw_partitioned": ("bench_parted", "PARTITION BY HASH (user_id)", _QUERY_HNSW),
}
PARTITIONS = 16


def _build(conn: Any, plan: str, dim: int, users: int, total: int) -> float:
    table, partition, _ = PLANS[plan]
    started = time.perf_counter()
    conn.execute(_ROWS.format(table=table, dim=dim, partition=partition))
    if partition:
        for r in range(PARTITIONS):
            conn.execute(
                f"CREATE TABLE {table}_{r} PARTITION OF {table} FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {r})"
            )
    conn.execute(_FILL.format(table=table, users=users, total=total))
    conn.execute(f"CREATE INDEX ON {table} (user_id, duration_seconds, end_time)")
    if plan != "exact_user_rows":
        conn.execute(f"CREATE INDEX ON {table} USING hnsw (caption_embedding vector_cosine_ops)")
    conn.execute(f"ANALYZE {table}")
    return time.perf_counter() - started


def _ids(conn: Any, sql: str, params: dict[str, Any]) -> list[int]:
    return [row[0] for row in conn.execute(sql, params).fetchall()]


def run(
    users: int, rows_per_user: int, dim: int, queries: int, ef_search: int, seed: int, *, maintenance_mb: int = 1024
) -> dict[str, Any]:
    import psycopg

    total = users * rows_per_user
    root = Path(tempfile.mkdtemp(prefix="worldmm-vector-bench-"))
    root.chmod(0o755)
    local = start_local_database(root / "pgdata")
    try:
        conninfo = local.admin_url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(f"SET maintenance_work_mem = '{int(maintenance_mb)}MB'")  # the HNSW graph built in memory
            conn.execute("SELECT setseed(%s)", (seed / 1000,))
            conn.execute(_BASIS.format(dim=dim))
            build_s = {plan: round(_build(conn, plan, dim, users, total), 1) for plan in PLANS}
            basis = np.array(
                [np.fromstring(v[1:-1], sep=",") for (v,) in conn.execute("SELECT v::text FROM bench_basis ORDER BY k")]
            )
            rng = random.Random(seed)
            asked = []
            for _ in range(queries):
                vector = basis[rng.randrange(256)] + basis[rng.randrange(256)] + basis[rng.randrange(256)]
                vector /= np.linalg.norm(vector)
                asked.append(
                    {
                        "q": "[" + ",".join(f"{x:.6g}" for x in vector) + "]",
                        "u": f"user-{rng.randrange(users)}",
                        "d": [30],
                        "until": "2100-01-01",
                    }
                )
            conn.execute("SET hnsw.iterative_scan = 'relaxed_order'")
            conn.execute(f"SET hnsw.ef_search = {int(ef_search)}")
            times: dict[str, list[float]] = {plan: [] for plan in PLANS}
            recall: dict[str, list[float]] = {plan: [] for plan in PLANS}
            for params in asked:  # warm-up: every plan's pages in shared buffers
                for table, _, sql in PLANS.values():
                    _ids(conn, sql.format(table=table), params)
            for params in asked:
                truth = set(_ids(conn, _QUERY_EXACT.format(table="bench_exact"), params))
                for plan, (table, _, sql) in PLANS.items():  # interleaved: the same load for every plan
                    started = time.perf_counter()
                    found = _ids(conn, sql.format(table=table), params)
                    times[plan].append((time.perf_counter() - started) * 1000)
                    recall[plan].append(len(truth & set(found)) / max(1, len(truth)))
            sizes = {
                plan: round(
                    conn.execute("SELECT pg_total_relation_size(%s)", (table,)).fetchone()[0] / 1e6
                    if plan != "hnsw_partitioned"
                    else sum(
                        conn.execute("SELECT pg_total_relation_size(%s)", (f"{table}_{r}",)).fetchone()[0]
                        for r in range(PARTITIONS)
                    )
                    / 1e6,
                    1,
                )
                for plan, (table, _, _) in PLANS.items()
            }
        return {
            "benchmark": "per_user_vector_search",
            "machine": f"{platform.machine()} {os.cpu_count()} cpu",
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "rows": total,
            "users": users,
            "rows_per_user": rows_per_user,
            "dim": dim,
            "queries": queries,
            "maintenance_work_mem_mb": maintenance_mb,
            "hnsw_ef_search": ef_search,
            "baseline": "hnsw_iterative (the schema's index, hybrid.py's query)",
            "plans": {
                plan: {
                    "p50_ms": round(statistics.median(times[plan]), 2),
                    "p95_ms": round(float(np.percentile(times[plan], 95)), 2),
                    "recall_at_10": round(float(np.mean(recall[plan])), 4),
                    "min_recall_at_10": round(float(np.min(recall[plan])), 2),
                    "build_s": build_s[plan],
                    "size_mb": sizes[plan],
                }
                for plan in PLANS
            },
        }
    finally:
        local.server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--rows-per-user", type=int, default=2000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--ef-search", type=int, default=100)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument(
        "--maintenance-mb", type=int, default=1024, help="maintenance_work_mem for index builds (1M rows: 4096)"
    )
    args = parser.parse_args()
    print(
        json.dumps(
            run(
                args.users,
                args.rows_per_user,
                args.dim,
                args.queries,
                args.ef_search,
                args.seed,
                maintenance_mb=args.maintenance_mb,
            )
        )
    )


if __name__ == "__main__":
    main()
