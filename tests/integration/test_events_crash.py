"""App events survive a crash (issue 65): the ingest killed between a window's commit and its events'
publish (and between the publish and its mark) still delivers every event after the recovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.crash import PATHS, AppEvents, World, run_point
from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world(pg: LocalDatabase, tmp_path_factory: pytest.TempPathFactory) -> World:
    from tests.support.harness import make_settings, truncate_all

    truncate_all(pg.admin_url)
    root: Path = tmp_path_factory.mktemp("events-crash")
    settings = make_settings(database_url=pg.app_url, database_admin_url=pg.admin_url, worldmm_home=root / "home")
    return World(settings, root / "store", Database(pg.app_url), pg.admin_url)


@pytest.mark.parametrize("point", AppEvents.KILL_POINTS, ids=lambda p: f"{p[0]}#{p[1]}")
def test_an_ingest_killed_between_commit_and_publish_still_delivers_every_event(
    world: World, point: tuple[str, int]
) -> None:
    # GIVEN three uploaded windows; WHEN the child ending the session is SIGKILLed at the point, then recovered
    result = run_point(world, PATHS["app_events"], AppEvents.KILL_POINTS.index(point) + 1, str(point), arm=point,
                       delay=None)
    # THEN it was killed there, and each window's event and the session's one event were delivered
    assert result.outcome == "killed", result
    assert result.problems == [], result.problems


def test_the_uncrashed_run_delivers_each_event_exactly_once(world: World) -> None:
    from tests.support.events import FilePublisher

    result = run_point(world, PATHS["app_events"], 99, "none", arm=None, delay=None)
    assert result.outcome == "ok" and result.problems == [], result
    mine = [e for e in FilePublisher(world.events_file).delivered() if e["sessionId"].endswith("-99")]
    assert sorted(e["type"] for e in mine) == ["SessionProcessed"] + ["WindowProcessed"] * 3
