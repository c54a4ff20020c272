"""SnapStart: a snapshot of an API function holds no connection, and its restored copies draw their own ids,
random numbers and connections (worldmm/snapstart.py). Restore is simulated by forking the initialised
process: each child is a copy of the same memory, as Lambda resumes copies of one snapshot (with `random`'s
state put back as the snapshot held it: CPython reseeds it at fork, which a restore does not do)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from tests.support.harness import TEST_EMBEDDING_DIM, TEST_VISUAL_DIM
from worldmm.db.local import LocalDatabase

ROOT = Path(__file__).resolve().parents[2]

# Init as the chat function does it, one request's worth of database use, the snapshot, then two copies.
_SIMULATION = """
import json, os, random, sys, uuid
from sqlalchemy import text
import handlers.http.memories.chat.app  # the function's init: what the snapshot holds
from worldmm import snapstart
from worldmm.chat.paging import ChatRules
from worldmm.services import get_services

def backend_pid():
    with get_services().db.unit_of_work(None) as session:
        return session.execute(text("SELECT pg_backend_pid()")).scalar_one()

before = {"pid": backend_pid(), "ulid": ChatRules.new_id()}
snapstart.before_snapshot()
snapshot_random = random.getstate()
print(json.dumps({"before": before}), flush=True)
sys.stdin.readline()  # the test looks at the server's connections now
restore = sys.argv[1] == "restore"
copies = []
for _ in range(2):
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        random.setstate(snapshot_random)  # a fork reseeds `random` itself; a snapshot restore does not
        if restore:
            snapstart.after_restore()
        copy = {
            "random": random.random(),
            "ulid": ChatRules.new_id(),
            "uuid": str(uuid.uuid4()),
            "pid": backend_pid() if restore else None,
        }
        os.write(write, json.dumps(copy).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        copies.append(json.loads(pipe.read()))
    os.wait()
print(json.dumps({"copies": copies}), flush=True)
"""


def _simulate(pg: LocalDatabase, mode: str) -> tuple[dict[str, Any], list[dict[str, Any]], set[int]]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
        "WORLDMM_PROFILE": "local",
        "DATABASE_URL": pg.app_url,
        "LLM_PROVIDER": "scripted",
        "EMBEDDING_PROVIDER": "hash",
        "EMBEDDING_DIM": str(TEST_EMBEDDING_DIM),
        "VISUAL_EMBEDDING_DIM": str(TEST_VISUAL_DIM),
        "POWERTOOLS_METRICS_NAMESPACE": "WorldMMTest",
        "HOME": os.environ.get("HOME", "/tmp"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _SIMULATION, mode],
        env=env,
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = (line for line in proc.stdout if line.startswith("{"))
    before = json.loads(next(lines, "{}")).get("before")
    assert before, proc.stderr.read() if proc.stderr else ""
    engine = create_engine(pg.admin_url)
    with engine.connect() as conn:
        at_snapshot = set(conn.execute(text("SELECT pid FROM pg_stat_activity")).scalars())
    engine.dispose()
    proc.stdin.write("\n")
    proc.stdin.flush()
    copies = json.loads(next(lines, "{}")).get("copies")
    proc.wait(timeout=60)
    assert copies, proc.stderr.read() if proc.stderr else ""
    return before, copies, at_snapshot


def test_snapshot_holds_no_connection_and_restored_copies_draw_their_own_ids_and_connections(
    pg: LocalDatabase,
) -> None:
    # GIVEN the chat function initialised, a request served, then the before-snapshot hook
    before, copies, at_snapshot = _simulate(pg, "restore")
    # THEN the connection that request used is closed: the snapshot holds none
    assert before["pid"] not in at_snapshot
    # AND each restored copy (after-restore hook) draws its own random numbers, ULIDs and uuids
    first, second = copies
    assert first["random"] != second["random"]
    assert len({before["ulid"], first["ulid"], second["ulid"]}) == 3
    assert first["uuid"] != second["uuid"]
    # AND opens its own server connection, not one from before the snapshot
    assert len({before["pid"], first["pid"], second["pid"]}) == 3


def test_without_the_after_restore_hook_copies_repeat_the_same_random_numbers(pg: LocalDatabase) -> None:
    # GIVEN the same snapshot, resumed twice WITHOUT the after-restore hook
    _, copies, _ = _simulate(pg, "no-hook")
    # THEN both copies draw the same `random` numbers: the hazard the hook exists for
    assert copies[0]["random"] == copies[1]["random"]
    # AND uuid4 (kernel entropy on every call) stays unique even so
    assert copies[0]["uuid"] != copies[1]["uuid"]
