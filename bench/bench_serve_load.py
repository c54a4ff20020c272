"""Chat under load on `worldmm serve`: N people asking at once about a real memory, with the real local models.

Ingests the sample morning into a fresh local home (its own embedded PostgreSQL), serves the gateway on a
loopback port, and has `--askers` threads post the sample's questions to `POST /memories/chat` one after
another for `--seconds`, each as its own user whose memory is the sample's (the demo user's segments are read
by every asker: the load is N questions at once on one host's models). Prints one JSON object: chats, chats a
second, p50 / p95 / max seconds, how many were written by the reader, and every status other than 200.

    python -m bench.bench_serve_load [--askers 10] [--seconds 60] [--out FILE]

The per-user allowance of model calls is off for the run (a rate limit, not what is measured); `--env` sets
any other setting.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.bench_answers import fresh_local_home
from bench.bench_fresh_days import percentile
from bench.report import write_result


def _ask_loop(url: str, token: str, questions: list[str], until: float, out: list[dict[str, Any]]) -> None:
    """Post the questions in turn until `until`, recording each chat's status, seconds and note."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        i = 0
        while time.monotonic() < until:
            started = time.monotonic()
            reply = client.post("/memories/chat/verbose", json={"question": questions[i % len(questions)]})
            body = reply.json() if reply.headers.get("content-type", "").startswith("application/json") else {}
            note = (body.get("trace") or {}).get("answer_note") or ""
            out.append({"status": reply.status_code, "seconds": time.monotonic() - started, "note": note})
            i += 1


def measure(askers: int, seconds: float) -> dict[str, Any]:
    """Serve the ingested sample and load it with `askers` concurrent askers for `seconds`."""
    from tests.support.gateway import running_gateway
    from worldmm.demo import DEMO_USER, SAMPLE_SESSION, load_questions, local_profile, run_demo
    from worldmm.gateway.auth import issue_token
    from worldmm.retrieval.reader import load_model
    from worldmm.services import Services

    questions = [q.question for q in load_questions(SAMPLE_SESSION)]
    with fresh_local_home("worldmm-bench-serve-load-") as (home, local):
        settings = local_profile(home, local)
        with contextlib.redirect_stdout(io.StringIO()):
            run_demo(settings, questions=[])
        services = Services(settings)
        load_model(services)  # a server's start-up: the reader's model loaded and timed before the first question
        services.embedder.embed(["warm-up"])
        with running_gateway(services) as gateway:
            token = issue_token(DEMO_USER, settings)
            chats: list[dict[str, Any]] = []
            until = time.monotonic() + seconds
            threads = [
                threading.Thread(
                    target=_ask_loop, args=(gateway.url, token, questions[i:] + questions[:i], until, chats)
                )
                for i in range(askers)
            ]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - started
    answered = [c["seconds"] for c in chats if c["status"] == 200]
    return {
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "askers": askers,
        "seconds": round(elapsed, 1),
        "chats": len(chats),
        "chats_per_s": round(len(answered) / elapsed, 2),
        "p50_s": round(statistics.median(answered), 2) if answered else None,
        "p95_s": round(percentile(answered, 0.95), 2) if answered else None,
        "max_s": round(max(answered), 2) if answered else None,
        "written_by_reader": sum("written by the local reader" in c["note"] for c in chats),
        "reader_skipped": sum("skipped" in c["note"] for c in chats),
        "not_200": sorted({c["status"] for c in chats} - {200}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--askers", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="a setting for this run")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    os.environ["CHAT_ALLOWANCE_MODEL_CALLS"] = "0"
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--env needs KEY=VALUE, not {item!r}")
        os.environ[key] = value
    report = measure(args.askers, args.seconds)
    report["env"] = args.env
    if args.out:
        write_result(report, args.out)
    else:
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
