"""App events on `worldmm serve` (issue 65): sessions of 4 windows ingested while their owners listen on
`GET /events`; how long from each event's commit to its arrival on the owner's stream.

Embedded PostgreSQL 18, the gateway on 127.0.0.1 (uvicorn, as `worldmm serve`), scripted models (the ingest's
model time is not what is measured). `--users` wearers each listen on their own stream and one bystander
listens too; `--sessions` sessions are spread over the wearers, each ended, its 4 windows ingested in this
process as capture's window close runs them. Latency is the arrival time less the event's `occurredAt` (the
start of the transaction that committed it: an upper bound of commit → delivery). Checks: per session
exactly 4 WindowProcessed and 1 SessionProcessed on its owner's stream, none on another's, no duplicate.
Target: p95 <= 2 s.

    python -m bench.bench_events --sessions 50
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.report import latency_summary, machine, write_result

RESULTS = Path(__file__).resolve().parent / "results"
WINDOWS = 4


def run(sessions: int, users: int) -> dict[str, Any]:
    from tests.support.gateway import local_capture_services, running_gateway
    from tests.support.harness import embedded_postgres, make_settings
    from tests.support.ingest import put_session, put_window
    from tests.support.sse import SseListener
    from worldmm.db.engine import Database
    from worldmm.gateway.auth import issue_token
    from worldmm.ingest.events import IngestWindowEvent
    from worldmm.ingest.window import ingest_window
    from worldmm.llm.scripted import ScriptedLLM

    with tempfile.TemporaryDirectory() as root, embedded_postgres(make_settings(worldmm_home=Path(root))) as pg:
        settings = make_settings(
            database_url=pg.app_url, database_admin_url=pg.admin_url, worldmm_home=Path(root) / "home"
        )
        services = local_capture_services(settings, Database(pg.app_url), ScriptedLLM(), Path(root) / "objects", 2)
        owners = [f"bench-user-{u}" for u in range(users)]
        with running_gateway(services) as gateway:
            url = f"{gateway.url}/events"
            listeners = {u: SseListener(url, issue_token(u, settings)).start() for u in [*owners, "bench-bystander"]}
            started = time.monotonic()
            expected: dict[str, str] = {}
            for n in range(sessions):
                owner, session_id = owners[n % users], f"bench-session-{n:04d}"
                expected[session_id] = owner
                put_session(services.store, session_id, user_id=owner)
                key = f"sessions/{session_id}/metadata.json"
                doc = json.loads(services.store.get(key))
                services.store.put(key, json.dumps({**doc, "endedAt": doc["createdAt"]}).encode())
                for index in range(WINDOWS):
                    put_window(services.store, session_id, index, frames=2)
                for index in range(WINDOWS):
                    event = IngestWindowEvent(sessionId=session_id, userId=owner, windowIndex=index, frameCount=2)
                    ingest_window(services, event)
            ingest_s = time.monotonic() - started
            for owner in owners:
                listeners[owner].wait_for(sessions // users * (WINDOWS + 1), timeout=30)
            time.sleep(1.5)  # anything late or misrouted has arrived by now
            for listener in listeners.values():
                listener.stop()
    delays, problems = [], []
    per_session: dict[str, Counter[str]] = {s: Counter() for s in expected}
    for user, listener in listeners.items():
        ids = [m.data["eventId"] for m in listener.messages]
        if len(ids) != len(set(ids)):
            problems.append(f"{user}: {len(ids) - len(set(ids))} duplicates")
        for m in listener.messages:
            if expected.get(m.data["sessionId"]) != user or m.data["userId"] != user:
                problems.append(f"{user} received {m.data['sessionId']}'s event")
                continue
            per_session[m.data["sessionId"]][m.event] += 1
            delays.append((m.received - datetime.fromisoformat(m.data["occurredAt"]).timestamp()) * 1000)
    wrong = {s: dict(c) for s, c in per_session.items() if c != Counter(WindowProcessed=WINDOWS, SessionProcessed=1)}
    if wrong:
        problems.append(f"{len(wrong)} sessions without exactly {WINDOWS} + 1 events: {dict(list(wrong.items())[:3])}")
    latency = latency_summary(delays) if delays else {}
    return {
        "benchmark": "events",
        "machine": machine(),
        "sessions": sessions,
        "windows_per_session": WINDOWS,
        "users": users,
        "events_delivered": len(delays),
        "events_to_another_user": sum("received" in p for p in problems),
        "ingest_s": round(ingest_s, 2),
        "delivery_latency": latency,
        "target_p95_ms": 2000,
        "meets_target": bool(latency) and latency["p95_ms"] <= 2000 and not problems,
        "problems": problems,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--users", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "events.json")
    args = parser.parse_args(argv)
    result = run(args.sessions, args.users)
    write_result(result, args.out)
    return 0 if result["meets_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
