"""PostgreSQL server connections taken by concurrent Lambda containers, and the bound the template sets.

Runs N containers at once, each a real process cold-started with one of template.yaml's functions and that
function's environment (aws profile, the RDS database secret pointing at the embedded PostgreSQL 18 +
pgvector, a moto server, the model servers and GPU worker double on 127.0.0.1; see tests/deployed): half of
them IngestWindowFunction (one window each, of one wearer's session), half ChatFunction (a cold and a warm
question). A sampler reads pg_stat_activity every 20 ms and reports the application role's server
connections: the peak while the containers run, and what they hold once every one is idle (alive with its
pool, as Lambda keeps a warm container). For each pool configuration (the template's DATABASE_POOL_SIZE +
DATABASE_MAX_OVERFLOW, and the former 10 + 20) and each N in --levels; then what 2,000 concurrent executions
need, with and without the template's RDS Proxy (`DatabaseProxyEndpoint`).

    python -m bench.bench_connections [--levels 2 4 8 16] [--pools template former]

Prints one JSON object (bench/run_all.py writes it to bench/results/connections.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONTAINER = ROOT / "bench" / "connection_container.py"
APP_ROLE = "worldmm_app"  # the application role of tests/deployed's RDS secret
POOLS: dict[str, dict[str, str]] = {
    "template": {},  # DATABASE_POOL_SIZE / DATABASE_MAX_OVERFLOW as template.yaml's Globals set them
    "former": {"DATABASE_POOL_SIZE": "10", "DATABASE_MAX_OVERFLOW": "20"},  # engine.py's defaults
    # No overflow at all: a request that needed a second connection at once would wait out the pool timeout.
    "single": {"DATABASE_POOL_SIZE": "1", "DATABASE_MAX_OVERFLOW": "0"},
}
QUESTIONS = ("Who did I talk with in the kitchen?", "What do I still have to book?")


class ConnectionSampler(threading.Thread):
    """Counts the application role's client backends in pg_stat_activity, every `interval_s`."""

    def __init__(self, admin_url: str, interval_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        from sqlalchemy import create_engine

        self._engine = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_size=1)
        self._interval_s = interval_s
        self._done = threading.Event()
        self.peak = 0
        self.samples = 0

    def count(self) -> int:
        from sqlalchemy import text

        with self._engine.connect() as conn:
            return int(
                conn.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE usename = :role AND backend_type = :kind"),
                    {"role": APP_ROLE, "kind": "client backend"},
                ).scalar_one()
            )

    def max_connections(self) -> int:
        from sqlalchemy import text

        with self._engine.connect() as conn:
            return int(conn.execute(text("SHOW max_connections")).scalar_one())

    def io(self) -> dict[str, int]:
        """WAL position and the database's page reads (from disk or OS cache) and buffer hits so far."""
        from sqlalchemy import text

        with self._engine.connect() as conn:
            wal = conn.execute(text("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")).scalar_one()
            read, hit = conn.execute(
                text("SELECT blks_read, blks_hit FROM pg_stat_database WHERE datname = current_database()")
            ).one()
        return {"wal_bytes": int(wal), "pages_read": int(read), "pages_hit": int(hit)}

    def reset(self) -> None:
        self.peak = 0

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, self.count())
            self.samples += 1
            time.sleep(self._interval_s)

    def stop(self) -> None:
        self._done.set()
        self.join()
        self._engine.dispose()


def _frames(count: int) -> list[bytes]:
    from bench.bench_cost import _frame

    return [_frame(320, 180, seed) for seed in range(count)]


def prepare_session(stack: Any, windows: int, frames: int) -> tuple[str, str]:
    """One wearer's capture session with `windows` windows uploaded and their uploads handled."""
    from bench.bench_cost import WINDOW_S, _wav
    from tests.deployed.emulators import backdate_session
    from tests.deployed.test_deployed_flow import sqs_event
    from tests.support.capture import http_event

    user = f"conn-{uuid.uuid4()}"
    started = stack.invoke("CaptureStartFunction", http_event("POST", "/sessions", sub=user)).result
    session = json.loads(started["body"])["sessionId"]
    backdate_session(stack, session, WINDOW_S * windows + 60)
    s3, bucket = stack.client("s3"), stack.physical["FramesBucket"]
    images, audio = _frames(4), _wav(2)
    for window in range(windows):
        prefix = f"sessions/{session}/window_{window}/"
        for i in range(frames):
            s3.put_object(Bucket=bucket, Key=f"{prefix}frame_{i:04d}.jpg", Body=images[(window + i) % len(images)])
        s3.put_object(Bucket=bucket, Key=f"{prefix}audio.wav", Body=audio)
    stack.invoke("CaptureUploadsFunction", sqs_event(stack, "UploadEventsQueue"))
    return user, session


def run_level(
    stack: Any,
    sampler: ConnectionSampler,
    containers: int,
    windows: Iterator[int],
    user: str,
    session: str,
    frames: int,
    extra_env: dict[str, str],
    snapstart: bool = False,
) -> dict[str, Any]:
    """`containers` processes at once (even: ingest, odd: chat); their peak and idle server connections."""
    from tests.support.capture import http_event

    chat = [http_event("POST", "/memories/chat", sub=user, body={"question": q}) for q in QUESTIONS]
    procs: list[subprocess.Popen[bytes]] = []
    functions: list[str] = []
    sampler.reset()
    io_before = sampler.io()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="worldmm-conn-") as tmp:
        for i in range(containers):
            function = "IngestWindowFunction" if i % 2 == 0 else "ChatFunction"
            events = (
                [{"sessionId": session, "userId": user, "windowIndex": next(windows), "frameCount": frames}]
                if function == "IngestWindowFunction"
                else chat
            )
            events_path = Path(tmp, f"events-{i}.json")
            events_path.write_text(json.dumps(events))
            module, handler = stack.functions()[function]["Handler"].rsplit(".", 1)
            log = open(Path(tmp, f"log-{i}.txt"), "wb")  # noqa: SIM115  (closed below, after the process)
            proc = subprocess.Popen(
                [sys.executable, str(CONTAINER), module, handler, str(events_path), *(["--snapstart"] * snapstart)],
                env=stack.lambda_env(function, extra_env),
                cwd=tmp,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.close()
            procs.append(proc)
            functions.append(function)
        outcomes = [_wait_idle(Path(tmp, f"log-{i}.txt"), proc) for i, proc in enumerate(procs)]
        busy_s = time.monotonic() - started
        io = {k: v - io_before[k] for k, v in sampler.io().items()}
        time.sleep(0.1)
        idle = sampler.count()
        peak = max(sampler.peak, idle)
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.close()
        for proc in procs:
            proc.wait(timeout=60)
        _wait_drained(sampler)
    errors = [
        f"{f}: {o}"
        for f, report in zip(functions, outcomes, strict=True)
        for o in report["outcomes"]
        if o not in ("ok", "200")
    ]
    return {
        "containers": containers,
        "ingest": functions.count("IngestWindowFunction"),
        "chat": functions.count("ChatFunction"),
        "peak_connections": peak,
        "idle_connections": idle,
        "seconds": round(busy_s, 2),
        "errors": errors,
        "io": io,  # chat writes nothing to PostgreSQL (its messages go to DynamoDB): the WAL is ingest's
        "init": _init_timings(functions, outcomes),
    }


def _init_timings(functions: list[str], reports: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per function, medians: import (init, what a SnapStart snapshot holds), first request (after a
    restore: lazy imports, secrets, connections), a warm request (chat's second question)."""
    from statistics import median

    timings: dict[str, dict[str, float]] = {}
    for function in sorted(set(functions)):
        mine = [r for f, r in zip(functions, reports, strict=True) if f == function and "import_s" in r]
        if not mine:
            continue
        row = {
            "import_s": median(r["import_s"] for r in mine),
            "first_request_s": median(r["invoke_s"][0] for r in mine),
            "modules_at_init": median(r["modules_at_init"] for r in mine),
            "modules_imported_by_first_request": median(r["modules_imported_by_first_request"] for r in mine),
        }
        if all(len(r["invoke_s"]) > 1 for r in mine):
            row["warm_request_s"] = median(r["invoke_s"][1] for r in mine)
        timings[function] = row
    return timings


def _wait_drained(sampler: ConnectionSampler, timeout_s: float = 30.0) -> None:
    """Until the server has closed the exited containers' connections (the next level starts from none)."""
    deadline = time.monotonic() + timeout_s
    while sampler.count() and time.monotonic() < deadline:
        time.sleep(0.05)


def _wait_idle(log: Path, proc: subprocess.Popen[bytes], timeout_s: float = 300.0) -> dict[str, Any]:
    """The report line a container prints once its requests are done (it then idles, pool held)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in reversed(log.read_text(errors="replace").splitlines()):
            if line.startswith('{"outcomes"'):
                return dict(json.loads(line))
        if proc.poll() is not None:
            return {"outcomes": [f"exited {proc.returncode}: {log.read_text(errors='replace')[-1500:]}"]}
        time.sleep(0.05)
    return {"outcomes": ["timed out"]}


def pool_bound(stack: Any, extra_env: dict[str, str]) -> tuple[int, int]:
    env = stack.lambda_env("ChatFunction", extra_env)
    return int(env["DATABASE_POOL_SIZE"]), int(env["DATABASE_MAX_OVERFLOW"])


def model_executions(executions: int, pool_size: int, max_overflow: int, max_connections: int) -> dict[str, Any]:
    """Server connections `executions` concurrent function executions need, with and without the RDS Proxy."""
    proxy_percent = 100  # RDS Proxy's MaxConnectionsPercent default (its target group setting)
    return {
        "executions": executions,
        "without_proxy": {
            "idle_held": executions * pool_size,
            "worst_case": executions * (pool_size + max_overflow),
            "rule": "every container holds DATABASE_POOL_SIZE idle and may open DATABASE_MAX_OVERFLOW more",
        },
        "with_proxy": {
            "server_connections_at_most": f"MaxConnectionsPercent ({proxy_percent} % by default) x max_connections",
            "client_connections": executions * (pool_size + max_overflow),
            "rule": "the proxy multiplexes client connections onto at most MaxConnectionsPercent of the server's "
            "max_connections, per transaction unless a session is pinned (docs/cost.md)",
        },
        "example_max_connections": {
            "db.r6g.large (16 GiB)": _rds_default_max_connections(16),
            "db.r6g.xlarge (32 GiB)": _rds_default_max_connections(32),
            "this run's server": max_connections,
        },
    }


def _rds_default_max_connections(memory_gib: int) -> int:
    """RDS for PostgreSQL's default max_connections: LEAST(DBInstanceClassMemory / 9531392, 5000)."""
    return min(memory_gib * 1024**3 // 9531392, 5000)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", type=int, nargs="*", default=[2, 4, 8, 16], help="containers at once")
    parser.add_argument("--pools", nargs="*", choices=sorted(POOLS), default=["template", "former"])
    parser.add_argument("--frames", type=int, default=16, help="frames uploaded per window")
    parser.add_argument("--executions", type=int, default=2000, help="concurrent executions to model")
    parser.add_argument("--snapstart", type=int, default=1, help="also time init without/with the SnapStart hooks")
    args = parser.parse_args(argv)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ[name] = "testing"  # emulators only: never a real account
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    from tests.deployed.emulators import emulated_stack

    windows_needed = sum((n + 1) // 2 for n in args.levels) * len(args.pools) + 2 * args.snapstart
    report: dict[str, Any] = {
        "bench": "connections",
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, load {os.getloadavg()[0]:.2f}",
        "pools": {},
    }
    with emulated_stack() as emulated:
        stack = emulated.stack
        user, session = prepare_session(stack, windows_needed, args.frames)
        sampler = ConnectionSampler(emulated.pg.admin_url)
        report["max_connections"] = sampler.max_connections()
        sampler.start()
        windows = iter(range(windows_needed))
        try:
            for name in args.pools:
                pool_size, max_overflow = pool_bound(stack, POOLS[name])
                levels = []
                for n in args.levels:
                    level = run_level(stack, sampler, n, windows, user, session, args.frames, POOLS[name])
                    level["bound"] = n * (pool_size + max_overflow)
                    levels.append(level)
                    print(json.dumps({"pool": name, **level}), file=sys.stderr, flush=True)
                report["pools"][name] = {"pool_size": pool_size, "max_overflow": max_overflow, "levels": levels}
            if args.snapstart:
                # Init before vs after the snapshot: the same 2 containers without and with the hooks.
                report["snapstart"] = {
                    mode: run_level(stack, sampler, 2, windows, user, session, args.frames, {}, mode == "hooks")["init"]
                    for mode in ("plain", "hooks")
                }
        finally:
            sampler.stop()
    template = report["pools"].get("template") or next(iter(report["pools"].values()))
    report["model"] = model_executions(
        args.executions, template["pool_size"], template["max_overflow"], report["max_connections"]
    )
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
