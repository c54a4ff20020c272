"""The crash harness, short and with a fixed seed: every write path, SIGKILLed at named steps and at
random delays, converges after the recovery an operator would run (the full run: `make crash`)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench.crash import PATHS, World, add_bystander, run_path
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world(pg: LocalDatabase, tmp_path_factory: pytest.TempPathFactory) -> World:
    from tests.support.harness import make_settings, truncate_all

    truncate_all(pg.admin_url)
    root: Path = tmp_path_factory.mktemp("crash")
    settings: Settings = make_settings(
        database_url=pg.app_url, database_admin_url=pg.admin_url, worldmm_home=root / "home"
    )
    world = World(settings, root / "store", Database(pg.app_url), pg.admin_url)
    add_bystander(world)
    return world


@pytest.mark.parametrize("name", list(PATHS))
def test_a_killed_write_path_converges_after_recovery(world: World, name: str) -> None:
    # GIVEN the path traced once; WHEN it is killed at two of its named steps and after two random delays
    # (the second also kills its first recovery), restarted and recovered
    summary = run_path(world, PATHS[name], random.Random(7), randoms=2, max_named=2)
    # THEN every run converged (nothing lost, duplicated, half-written or left claimed), the kills happened
    assert summary["baseline_converged"], summary["failures"]
    assert summary["failures"] == []
    assert summary["converged"] == summary["kill_points"] == 4
    assert summary["killed"] >= 2
