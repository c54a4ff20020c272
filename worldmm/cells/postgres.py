"""The placement map in PostgreSQL (the local profile): `worldmm_cell_placements` in the first cell (0018).

Functions read, place and (forget-me) delete their own user's placement as the application role (row-level
security on `app.user_id`, migrations 0018 and 0020); a move's steps change a placement as the owner
(`operator`), which only `worldmm cells move` connects as.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from worldmm.cells.port import Placement, PlacementConflict
from worldmm.db.engine import USER_SETTING, Database
from worldmm.db.queries import cells as queries


class PostgresPlacementMap:
    """Placements in one cell's `worldmm_cell_placements`."""

    def __init__(self, db: Database, operator: Database | None = None) -> None:
        self._db = db
        self._operator = operator

    def get(self, user_id: str) -> Placement | None:
        with self._db.unit_of_work(None) as session:
            queries.set_user(session, USER_SETTING, user_id)
            row = queries.placement(session, user_id)
        return None if row is None else Placement(user_id, row.cell, row.moving_to)

    def place(self, user_id: str, cell: str) -> Placement:
        with self._db.unit_of_work(None) as session:
            queries.set_user(session, USER_SETTING, user_id)
            queries.insert_placement(session, user_id, cell)
        placed = self.get(user_id)
        assert placed is not None
        return placed

    def _operator_update(self, change: Callable[[Session], bool]) -> bool:
        if self._operator is None:
            from worldmm.errors import ConfigurationError

            raise ConfigurationError("moving a user needs the first cell's owner URL (databaseAdminUrl)")
        with self._operator.unit_of_work(None) as session:
            return change(session)

    def begin_move(self, user_id: str, source: str, target: str) -> Placement:
        if not self._operator_update(lambda session: queries.mark_moving(session, user_id, source, target)):
            raise PlacementConflict(f"the user is not on {source}, or is moving elsewhere")
        return Placement(user_id, source, target)

    def switch(self, user_id: str, source: str, target: str) -> Placement:
        if self._operator_update(lambda session: queries.switch_placement(session, user_id, source, target)):
            return Placement(user_id, target, target)
        raise PlacementConflict(f"the user is not moving from {source} to {target}")

    def finish(self, user_id: str, target: str) -> Placement:
        if not self._operator_update(lambda session: queries.clear_moving(session, user_id, target)):
            raise PlacementConflict(f"the user is not on {target}")
        return Placement(user_id, target)

    def forget(self, user_id: str) -> bool:
        with self._db.unit_of_work(None) as session:
            queries.set_user(session, USER_SETTING, user_id)
            if queries.delete_settled_placement(session, user_id):
                return True
            moving = queries.placement_exists(session, user_id)
        if moving:
            raise PlacementConflict("the user is being moved: finish the move, then forget them")
        return False
