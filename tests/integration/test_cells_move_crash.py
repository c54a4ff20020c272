"""`worldmm cells move` SIGKILLed at every one of its steps (the crash harness's crash points, in a forked
child), then run again as an operator would: every time the user ends on the target cell with every row
once, nothing left on the source, the map's move mark cleared (issue 63)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.crash import fork, wait
from tests.support.cells import cell_services, empty_cell, record_window, rows_of, two_cell_settings
from tests.support.harness import embedded_postgres, make_settings
from worldmm.cells.port import Placement
from worldmm.chat.service import handle_chat
from worldmm.db.local import LocalDatabase

pytestmark = pytest.mark.integration

KILL_POINTS = [
    ("cells.move.begun", 1),
    ("cells.move.fenced", 1),
    ("cells.move.table_copied", 1),
    ("cells.move.table_copied", 4),
    ("cells.move.copied", 1),
    ("cells.move.verified", 1),
    ("cells.move.switched", 1),
    ("cells.move.erased", 1),
    ("cells.move.finished", 1),
]


@pytest.fixture(scope="module")
def pg2() -> Iterator[LocalDatabase]:
    with embedded_postgres(make_settings()) as local:
        yield local


@pytest.mark.parametrize(("point", "hit"), KILL_POINTS, ids=[f"{p}#{h}" for p, h in KILL_POINTS])
def test_a_move_killed_at_a_step_is_finished_by_running_it_again(
    pg: LocalDatabase, pg2: LocalDatabase, tmp_path: Path, point: str, hit: int
) -> None:
    # GIVEN a user on a with two windows and a chat, and a bystander on a
    for cell in (pg, pg2):
        empty_cell(cell.admin_url)
    settings = two_cell_settings(pg, pg2, tmp_path)
    services = cell_services(settings, tmp_path)
    assert services.cells is not None
    services.cells.placements.place("moved", "a")
    services.cells.placements.place("bystander", "a")
    for index in (0, 1):
        assert record_window(services, "moved", "S-kill-0001", index) == "ok"
    assert record_window(services, "bystander", "S-byst-0001", 0) == "ok"
    handle_chat(services.for_user("moved"), "moved", "Who was I with?")
    before = {t: n for t, n in rows_of(pg.admin_url, "moved").items() if "generations" not in t}
    bystander = rows_of(pg.admin_url, "bystander")

    def move() -> None:
        cell_services(settings, tmp_path).cell_mover().move("moved", "b")

    # WHEN the move is killed at the step, then run again in a fresh process
    outcome = wait(fork(move, tmp_path / "kill.log", arm=(point, hit)))
    recovery = wait(fork(move, tmp_path / "recovery.log"))
    # THEN it was killed, the re-run finished it, and every row is on b once, none on a
    assert outcome == "killed", (tmp_path / "kill.log").read_text()[-2000:]
    assert recovery == "ok", (tmp_path / "recovery.log").read_text()[-2000:]
    after = {t: n for t, n in rows_of(pg2.admin_url, "moved").items() if "generations" not in t}
    assert after == before
    assert rows_of(pg.admin_url, "moved") == {}
    assert rows_of(pg.admin_url, "bystander") == bystander
    assert services.cells.placements.get("moved") == Placement("moved", "b")
    # AND the user records and asks on b
    assert record_window(services, "moved", "S-kill-0001", 2) == "ok"
    assert handle_chat(services.for_user("moved"), "moved", "And where?").answer
