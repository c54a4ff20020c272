"""GET /memories latency at N days of one user's memory: the timeline service on an embedded PostgreSQL.

Fills `worldmm_segments` (as the owner, in SQL) with `days` x 2,880 windows of one user plus their 3 min,
10 min and 1 h summaries, and as many rows of `--others` other users, then times `MemoryService.list_memories`
through the application role (row-level security on), as the handler calls it:

- day_windows: one day's 30 s windows, first page (100);
- day_all_scales: one day at every scale, first page;
- day_windows_deep: the last page of that day's windows (via the cursor of the page before);
- no_span_all_scales: everything, first page (no `from`/`to`).

Prints one JSON object and writes it to `--out`.

    python -m bench.bench_memories --days 90 --queries 50
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.report import machine, time_calls, write_result
from worldmm.scale import SCALES
from worldmm.timeline.models import MemoriesQuery

_FILL = """
INSERT INTO worldmm_segments (id, user_id, session_id, window_index, duration_seconds, start_time, end_time,
                              caption, caption_source, processing_status)
SELECT gen_random_uuid(), %(user)s, 'S' || (i * {scale} / 3600), i, {scale},
       %(t0)s::timestamptz + i * interval '{scale} seconds', %(t0)s::timestamptz + (i + 1) * interval '{scale} seconds',
       'caption ' || i, 'heard', 'complete'
FROM generate_series(0, %(n)s - 1) AS i
"""
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _fill(admin_url: str, users: list[str], days: int) -> dict[str, int]:
    import psycopg

    counts: dict[str, int] = {}
    with psycopg.connect(admin_url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        for user in users:
            for scale in SCALES:
                n = days * 86400 // scale
                conn.execute(_FILL.format(scale=scale), {"user": user, "t0": T0, "n": n})
                counts[str(scale)] = counts.get(str(scale), 0) + n
        conn.execute("ANALYZE worldmm_segments")
    return counts


def run(days: int, queries: int, others: int) -> dict[str, Any]:
    from tests.support.harness import embedded_postgres, make_settings
    from worldmm.db.engine import Database
    from worldmm.ingest.catalog.local import StoreSessionCatalog
    from worldmm.media.objects import DirectoryObjectStore
    from worldmm.timeline.service import MemoryService
    from worldmm.timeline.settings import TimelineSettings

    settings = make_settings()
    rng = random.Random(7)
    with embedded_postgres(settings) as local:
        user = "bench-user"
        started = time.perf_counter()
        rows = _fill(local.admin_url, [user, *[f"other-{i}" for i in range(others)]], days)
        fill_s = time.perf_counter() - started
        store = DirectoryObjectStore(Path(tempfile.mkdtemp(prefix="worldmm-bench-objects-")))
        service = MemoryService(
            TimelineSettings.of(settings),
            Database(local.app_url),
            store,
            StoreSessionCatalog(store),
            lambda: False,
        )

        def day(scale: int | None, cursor: str | None = None) -> MemoriesQuery:
            start = T0 + timedelta(days=rng.randrange(days))
            return MemoriesQuery.model_validate(
                {"from": start, "to": start + timedelta(days=1), "scale": scale, "cursor": cursor}
            )

        def deep() -> None:
            query = day(30)
            page = service.list_memories(user, query)
            for _ in range(27):  # 2,880 windows a day, 100 a page: page 28 ends at 2,800
                query = query.model_copy(update={"cursor": page.next_cursor})
                page = service.list_memories(user, query)

        timings = {
            "day_windows": time_calls(lambda: service.list_memories(user, day(30)), queries),
            "day_all_scales": time_calls(lambda: service.list_memories(user, day(None)), queries),
            "no_span_all_scales": time_calls(lambda: service.list_memories(user, MemoriesQuery()), queries),
        }
        deep_one = time_calls(deep, max(3, queries // 10))
        timings["day_windows_28_pages"] = deep_one
        timings["day_windows_per_page_of_28"] = {k: round(v / 28, 2) for k, v in deep_one.items()}
    return {
        "benchmark": "memories_timeline",
        "days": days,
        "rows_per_user": rows,
        "other_users": others,
        "page_size": settings.memory_page_default,
        "fill_s": round(fill_s, 1),
        "timings": timings,
        "target": "GET /memories p95 <= 50 ms at 90 days (issue 25)",
        "machine": machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--others", type=int, default=1, help="other users with the same amount of memory")
    parser.add_argument("--out", type=Path, default=Path("bench/results/memories.json"))
    args = parser.parse_args(argv)
    result = run(args.days, args.queries, args.others)
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
