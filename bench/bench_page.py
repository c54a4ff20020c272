"""The local page's first content for one day of memory: 2,880 windows and their 3 min, 10 min and 1 h summaries.

Fills one user's day (as the owner, in SQL) on an embedded PostgreSQL, serves it with `worldmm serve`'s app on
127.0.0.1, and loads `/?day=` in Debian's headless Chromium (Playwright) `--loads` times, signed in (the token in
sessionStorage before the page's script runs). From each load it reads the page's own marks, in ms since the
navigation started: `first_content` (the first memory of the day is in the DOM), `first_content_painted` (the
second animation frame after it: it has been painted) and `all_rendered` (all 3,528 memories of the four
scales). Target (issue 25): first content <= 1 s locally. Prints one JSON object and writes it to `--out`;
`--screenshot PATH` also saves the page with one memory open (docs/img/timeline.png).

    python -m bench.bench_page --loads 10 --screenshot docs/img/timeline.png
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.report import latency_summary, machine, write_result
from worldmm.scale import SCALES

DAY = datetime(2026, 11, 24, tzinfo=UTC)
USER = "bench-user"
_PLACES = ["at home", "in the kitchen", "on the street", "on the bus", "at the office", "in a meeting room",
           "at the café", "in the park", "at the shop", "in the living room"]
_DOINGS = ["Reading a message from Marco", "Making coffee", "Talking with Kate about the trip", "Walking past a bakery",
           "Typing notes on a laptop", "Looking for the keys", "Paying at the counter", "Watering the plants",
           "Listening to a podcast", "Writing a shopping list", "Waiting for the train", "Tidying the desk"]


def caption(scale: int, index: int) -> str:
    """A plausible caption that differs from its neighbours (so search and the screenshot show something)."""
    place = _PLACES[(index * scale // 3600) % len(_PLACES)]
    if scale == 3600:
        return f"An hour {place}."
    doing = _DOINGS[(index * 7 + scale) % len(_DOINGS)]
    return f"{doing} {place}." if scale == 30 else f"{doing} {place}, then more of the same."


def _fill(admin_url: str) -> dict[str, int]:
    import psycopg

    rows = []
    for scale in SCALES:
        for i in range(86400 // scale):
            start = DAY + timedelta(seconds=i * scale)
            session = f"S{i * scale // 3600:02d}"
            rows.append((USER, session, i, scale, start, start + timedelta(seconds=scale), caption(scale, i)))
    with psycopg.connect(admin_url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO worldmm_segments (id, user_id, session_id, window_index, duration_seconds, start_time,"
                " end_time, caption, caption_source, processing_status)"
                " VALUES (gen_random_uuid(), %s, %s, %s, %s, %s, %s, %s, 'heard', 'complete')",
                rows,
            )
        conn.execute("ANALYZE worldmm_segments")
    return {str(scale): 86400 // scale for scale in SCALES}


def run(loads: int, screenshot: Path | None) -> dict[str, Any]:
    from tests.support.browser import chromium
    from tests.support.gateway import running_gateway
    from tests.support.harness import embedded_postgres, make_settings
    from worldmm.db.engine import Database
    from worldmm.gateway.auth import issue_token
    from worldmm.llm.scripted import ScriptedLLM
    from worldmm.media.objects import DirectoryObjectStore
    from worldmm.memory.embedding.hashing import HashEmbedder
    from worldmm.services import Services

    with embedded_postgres(make_settings()) as local:
        rows = _fill(local.admin_url)
        settings = make_settings(database_url=local.app_url, database_admin_url=local.admin_url)
        store = DirectoryObjectStore(Path(tempfile.mkdtemp(prefix="worldmm-bench-page-")))
        services = Services(
            settings, db=Database(local.app_url), llm=ScriptedLLM(), embedder=HashEmbedder(settings.embedding_dim),
            store=store,
        )
        token = issue_token(USER, settings)
        first: list[float] = []
        painted: list[float] = []
        complete: list[float] = []
        with running_gateway(services) as gateway, chromium() as browser:
            context = browser.new_context(timezone_id="UTC", viewport={"width": 1400, "height": 900})
            context.add_init_script(f"sessionStorage.setItem('worldmm.token', {json.dumps(token)})")
            page = context.new_page()
            url = f"{gateway.url}/?day={DAY.date().isoformat()}"
            for load in range(loads + 1):  # the first load warms the server's handlers and the browser's cache
                page.goto(url)
                page.wait_for_selector("body[data-timeline=done]", state="attached", timeout=60_000)
                marks = page.evaluate(
                    "[window.__worldmmFirstContent, window.__worldmmFirstPaint, window.__worldmmTimelineDone]"
                )
                shown = page.locator("#timeline li.memory").count()
                assert shown == sum(rows.values()), shown
                if load:
                    first.append(marks[0])
                    painted.append(marks[1])
                    complete.append(marks[2])
            if screenshot is not None:
                page.locator('.lane[data-scale="30"] li.memory a').nth(20).click()
                page.wait_for_selector("#memory-body .caption")
                page.fill("#search", "")
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot))
            context.close()
    return {
        "benchmark": "page_first_content",
        "rows": rows,
        "loads": loads,
        "first_content": latency_summary(first, 1),
        "first_content_painted": latency_summary(painted, 1),
        "all_rendered": latency_summary(complete, 1),
        "target": "one day (2,880 windows) renders first content in <= 1 s locally (issue 25)",
        "browser": "Debian chromium, headless, via Playwright",
        "machine": machine(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--screenshot", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("bench/results/page.json"))
    args = parser.parse_args(argv)
    result = run(args.loads, args.screenshot)
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
