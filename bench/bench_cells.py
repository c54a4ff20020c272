"""A user moved between two cells while simulated wearers record windows and ask (issue 63): lost, doubled
and wrong-cell counts, and the move's time per GB of copied rows.

Two embedded PostgreSQL servers (cells a and b), scripted models, the real window and chat paths. The
moved user first records `--windows` windows; then `--wearers` threads (the moved user among them) record
and ask until the move is done, retrying a 503. Checked afterwards on both cells as the owner.

    python -m bench.bench_cells [--wearers 20] [--windows 40] [--out bench/results/cells.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from tests.support.cells import cell_services, empty_cell, record_window, rows_of, two_cell_settings
from tests.support.harness import embedded_postgres, make_settings
from worldmm.chat.service import handle_chat
from worldmm.errors import MemoryUnavailableError

RESULTS = Path(__file__).resolve().parent / "results"
MOVED = "wearer-00"


def _stored(admin_url: str, user: str) -> tuple[dict[int, int], int]:
    engine = create_engine(admin_url)
    with engine.connect() as conn:
        windows = conn.execute(
            text(
                "SELECT window_index, count(*) FROM worldmm_segments WHERE user_id = :u AND duration_seconds = 30 "
                "GROUP BY 1"
            ),
            {"u": user},
        ).all()
        answers = conn.execute(
            text("SELECT count(*) FROM worldmm_chat_messages WHERE user_id = :u AND role = 'assistant'"), {"u": user}
        ).scalar()
    engine.dispose()
    return {int(w): int(n) for w, n in windows}, int(answers or 0)


def run(wearers: int, windows: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="worldmm-cells-bench-"))
    try:
        with embedded_postgres(make_settings()) as a, embedded_postgres(make_settings()) as b:
            for cell in (a, b):
                empty_cell(cell.admin_url)
            settings = two_cell_settings(a, b, root)
            services = cell_services(settings, root)
            assert services.cells is not None
            users = [f"wearer-{i:02d}" for i in range(wearers)]
            for i, user in enumerate(users):
                services.cells.placements.place(user, "a" if i % 2 == 0 else "b")
            for index in range(windows):
                record_window(services, MOVED, "S-wearer-0000", index)
            for i, user in enumerate(users[1:], start=1):
                record_window(services, user, f"S-wearer-{i:04d}", 0)
            acked = {u: set(range(windows)) if u == MOVED else {0} for u in users}
            asked = dict.fromkeys(users, 0)
            refused = dict.fromkeys(users, 0)
            stop = threading.Event()
            errors: list[str] = []

            def wearer(i: int, user: str) -> None:
                index = max(acked[user]) + 1
                while not stop.is_set():
                    try:
                        if record_window(services, user, f"S-wearer-{i:04d}", index) == "ok":
                            acked[user].add(index)
                            index += 1
                        handle_chat(services.for_user(user), user, "Who was I with?")
                        asked[user] += 1
                    except MemoryUnavailableError:
                        refused[user] += 1
                        time.sleep(0.05)
                    except Exception as exc:
                        errors.append(f"{user}: {type(exc).__name__}: {exc}")
                        return

            threads = [threading.Thread(target=wearer, args=(i, u)) for i, u in enumerate(users)]
            for t in threads:
                t.start()
            time.sleep(1.0)
            started = time.perf_counter()
            report = services.cell_mover().move(MOVED, "b")
            move_s = time.perf_counter() - started
            time.sleep(1.0)
            stop.set()
            for t in threads:
                t.join(timeout=300)
            lost = doubled = wrong_cell = unsaved = 0
            for user in users:
                home, away = (b, a) if services.cells.cell_of(user) == "b" else (a, b)
                stored, answers = _stored(home.admin_url, user)
                lost += len(acked[user] - set(stored))
                doubled += sum(n - 1 for n in stored.values() if n > 1)
                unsaved += abs(answers - asked[user])
                wrong_cell += sum(rows_of(away.admin_url, user).values())
            copied = report.bytes_copied
            return {
                "machine": f"{os.cpu_count()} CPUs",
                "wearers": wearers,
                "moved_user_windows_before": windows,
                "windows_acknowledged": sum(len(v) for v in acked.values()),
                "questions_answered": sum(asked.values()),
                "refused_503": sum(refused.values()),
                "refused_503_moved_user": refused[MOVED],
                "lost": lost,
                "doubled": doubled,
                "answers_not_saved_or_extra": unsaved,
                "rows_on_the_wrong_cell": wrong_cell,
                "errors": errors[:5],
                "move": {**report.as_dict(), "seconds": round(move_s, 3)},
                "move_seconds_per_gb": round(move_s / (copied / 1e9), 1) if copied else None,
            }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wearers", type=int, default=20)
    parser.add_argument("--windows", type=int, default=40)
    parser.add_argument("--out", default=str(RESULTS / "cells.json"))
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)
    result = run(args.wearers, args.windows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 1 if result["lost"] or result["doubled"] or result["rows_on_the_wrong_cell"] or result["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
