"""The placement map's contract, met by both adapters: DynamoDB (moto) and `worldmm_cell_placements`
(the run's PostgreSQL, the application role placing, the owner moving)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.cells import empty_cell
from worldmm.cells.port import Placement, PlacementConflict, PlacementMap
from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase

pytestmark = pytest.mark.integration


@pytest.fixture(params=["dynamo", "postgres"])
def placements(request: pytest.FixtureRequest, pg: LocalDatabase) -> Iterator[PlacementMap]:
    if request.param == "dynamo":
        import boto3
        from moto import mock_aws

        from worldmm.cells.dynamo import DynamoPlacementMap, placements_table_definition

        with mock_aws():
            client: Any = boto3.client("dynamodb", region_name="us-east-1")
            client.create_table(**placements_table_definition("placements"))
            yield DynamoPlacementMap("placements", client)
    else:
        from worldmm.cells.postgres import PostgresPlacementMap

        empty_cell(pg.admin_url)
        yield PostgresPlacementMap(Database(pg.app_url, fenced=True), Database(pg.admin_url))


def test_a_user_never_placed_has_no_placement(placements: PlacementMap) -> None:
    assert placements.get("nobody") is None


def test_the_first_placement_of_a_user_wins(placements: PlacementMap) -> None:
    # GIVEN a user placed on a; WHEN another process places them on b
    assert placements.place("u1", "a") == Placement("u1", "a")
    # THEN they stay on a
    assert placements.place("u1", "b") == Placement("u1", "a")
    assert placements.get("u1") == Placement("u1", "a")


def test_a_move_begins_switches_and_finishes(placements: PlacementMap) -> None:
    placements.place("u1", "a")
    assert placements.begin_move("u1", "a", "b") == Placement("u1", "a", "b")
    assert placements.begin_move("u1", "a", "b") == Placement("u1", "a", "b")  # again after a crash
    assert placements.get("u1") == Placement("u1", "a", "b")
    assert placements.switch("u1", "a", "b") == Placement("u1", "b", "b")
    assert placements.switch("u1", "a", "b") == Placement("u1", "b", "b")  # again after a crash
    assert placements.finish("u1", "b") == Placement("u1", "b")
    assert placements.get("u1") == Placement("u1", "b")


def test_a_move_step_whose_condition_fails_is_a_conflict(placements: PlacementMap) -> None:
    placements.place("u1", "a")
    with pytest.raises(PlacementConflict):
        placements.begin_move("u1", "b", "c")  # not on b
    placements.begin_move("u1", "a", "b")
    with pytest.raises(PlacementConflict):
        placements.begin_move("u1", "a", "c")  # moving elsewhere already
    with pytest.raises(PlacementConflict):
        placements.switch("u1", "a", "c")
    with pytest.raises(PlacementConflict):
        placements.finish("u1", "c")
    assert placements.get("u1") == Placement("u1", "a", "b")


def test_one_users_placement_is_not_anothers(placements: PlacementMap) -> None:
    placements.place("u1", "a")
    placements.place("u2", "b")
    assert placements.get("u1") == Placement("u1", "a")
    assert placements.get("u2") == Placement("u2", "b")


def test_forget_deletes_the_users_placement_and_no_one_elses(placements: PlacementMap) -> None:
    # GIVEN two placed users
    placements.place("u1", "a")
    placements.place("u2", "a")
    # WHEN u1 is forgotten (twice: forget-me is re-run after a failure)
    assert placements.forget("u1") is True
    assert placements.forget("u1") is False
    # THEN u1 has no placement any more, u2 keeps theirs, and a never-placed user has nothing to forget
    assert placements.get("u1") is None
    assert placements.get("u2") == Placement("u2", "a")
    assert placements.forget("nobody") is False


def test_forget_is_refused_while_the_user_is_being_moved(placements: PlacementMap) -> None:
    # GIVEN a user whose move has begun (or was killed before it finished)
    placements.place("u1", "a")
    placements.begin_move("u1", "a", "b")
    # WHEN forget-me deletes the placement; THEN a conflict, and the placement (and move mark) stay
    with pytest.raises(PlacementConflict):
        placements.forget("u1")
    assert placements.get("u1") == Placement("u1", "a", "b")
    # AND once the move is finished it goes
    placements.switch("u1", "a", "b")
    placements.finish("u1", "b")
    assert placements.forget("u1") is True
