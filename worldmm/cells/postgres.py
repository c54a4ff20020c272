"""The placement map in PostgreSQL (the local profile): `worldmm_cell_placements` in the first cell (0018).

Functions read, place and (forget-me) delete their own user's placement as the application role (row-level
security on `app.user_id`, migrations 0018 and 0020); a move's steps change a placement as the owner
(`operator`), which only `worldmm cells move` connects as.
"""

from __future__ import annotations

from sqlalchemy import text

from worldmm.cells.port import Placement, PlacementConflict
from worldmm.db.engine import Database


class PostgresPlacementMap:
    """Placements in one cell's `worldmm_cell_placements`."""

    def __init__(self, db: Database, operator: Database | None = None) -> None:
        self._db = db
        self._operator = operator

    def get(self, user_id: str) -> Placement | None:
        with self._db.unit_of_work(None) as session:
            session.execute(text("SELECT set_config('app.user_id', :u, true)"), {"u": user_id})
            row = session.execute(
                text("SELECT cell, moving_to FROM worldmm_cell_placements WHERE placed_user = :u"), {"u": user_id}
            ).one_or_none()
        return None if row is None else Placement(user_id, row.cell, row.moving_to)

    def place(self, user_id: str, cell: str) -> Placement:
        with self._db.unit_of_work(None) as session:
            session.execute(text("SELECT set_config('app.user_id', :u, true)"), {"u": user_id})
            session.execute(
                text(
                    "INSERT INTO worldmm_cell_placements (placed_user, cell) VALUES (:u, :c) "
                    "ON CONFLICT (placed_user) DO NOTHING"
                ),
                {"u": user_id, "c": cell},
            )
        placed = self.get(user_id)
        assert placed is not None
        return placed

    def _operator_update(self, user_id: str, sql: str, values: dict[str, str]) -> bool:
        if self._operator is None:
            from worldmm.errors import ConfigurationError

            raise ConfigurationError("moving a user needs the first cell's owner URL (databaseAdminUrl)")
        with self._operator.unit_of_work(None) as session:
            result = session.execute(text(sql), {"u": user_id, **values})
            return bool(getattr(result, "rowcount", 0))

    def begin_move(self, user_id: str, source: str, target: str) -> Placement:
        if not self._operator_update(
            user_id,
            "UPDATE worldmm_cell_placements SET moving_to = :t, updated_at = now() WHERE placed_user = :u "
            "AND cell = :s AND (moving_to IS NULL OR moving_to = :t)",
            {"s": source, "t": target},
        ):
            raise PlacementConflict(f"the user is not on {source}, or is moving elsewhere")
        return Placement(user_id, source, target)

    def switch(self, user_id: str, source: str, target: str) -> Placement:
        if self._operator_update(
            user_id,
            "UPDATE worldmm_cell_placements SET cell = :t, updated_at = now() WHERE placed_user = :u "
            "AND ((cell = :s AND moving_to = :t) OR (cell = :t AND moving_to = :t))",
            {"s": source, "t": target},
        ):
            return Placement(user_id, target, target)
        raise PlacementConflict(f"the user is not moving from {source} to {target}")

    def finish(self, user_id: str, target: str) -> Placement:
        if not self._operator_update(
            user_id,
            "UPDATE worldmm_cell_placements SET moving_to = NULL, updated_at = now() WHERE placed_user = :u "
            "AND cell = :t",
            {"t": target},
        ):
            raise PlacementConflict(f"the user is not on {target}")
        return Placement(user_id, target)

    def forget(self, user_id: str) -> bool:
        with self._db.unit_of_work(None) as session:
            session.execute(text("SELECT set_config('app.user_id', :u, true)"), {"u": user_id})
            deleted = session.execute(
                text("DELETE FROM worldmm_cell_placements WHERE placed_user = :u AND moving_to IS NULL RETURNING cell"),
                {"u": user_id},
            ).one_or_none()
            if deleted is not None:
                return True
            moving = session.execute(
                text("SELECT moving_to FROM worldmm_cell_placements WHERE placed_user = :u"), {"u": user_id}
            ).one_or_none()
        if moving is not None:
            raise PlacementConflict("the user is being moved: finish the move, then forget them")
        return False
