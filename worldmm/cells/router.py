"""Which cell's database holds a user: the placement map read once, a new user placed where there is most room.

Only the composition root uses it (`Services.for_user`, `Services.every_cell`); nothing else knows cells exist.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from threading import Lock

from aws_lambda_powertools import Logger

from worldmm.cells.port import PlacementMap
from worldmm.config import CellSettings, Settings
from worldmm.db.engine import USER_SETTING, Database
from worldmm.db.queries import cells as queries
from worldmm.errors import ConfigurationError

logger = Logger(child=True)

ROOM_MAX_AGE_S = 300.0
"""How long a process trusts a cell's measured size when placing new users."""


def cell_url(settings: Settings, cell: CellSettings) -> str:
    """The application role's URL of `cell`: its URL (local, tests), else its secret through its proxy (aws)."""
    if cell.database_url:
        return cell.database_url
    if cell.secret_arn:
        from worldmm.db.secret import url_from_secret

        return url_from_secret(cell.secret_arn, max_age_s=settings.database_secret_max_age_s, host=cell.proxy_host)
    raise ConfigurationError(f"cell {cell.id!r} has neither secretArn nor databaseUrl")


def holds_user(db: Database, user_id: str) -> bool:
    """Whether the cell holds memory or chats of the user (read as the user, under row-level security)."""
    with db.unit_of_work(None) as session:  # not entered: a forgotten user's old departure record is no refusal
        queries.set_user(session, USER_SETTING, user_id)
        return queries.holds_rows_of(session, user_id)


def used_bytes(db: Database) -> int:
    """What the cell's database holds on disk now (tables, indexes, TOAST)."""
    with db.unit_of_work(None) as session:
        return queries.database_size(session)


class CellRouter:
    """The deployment's cells and the placement map; a user's cell database, resolved."""

    def __init__(
        self,
        cells: Sequence[CellSettings],
        placements: PlacementMap,
        database: Callable[[CellSettings], Database],
        *,
        measure: Callable[[Database], int] = used_bytes,
        holds: Callable[[Database, str], bool] = holds_user,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if len({c.id for c in cells}) != len(cells) or not cells:
            raise ConfigurationError("DATABASE_CELLS needs at least one cell and distinct ids")
        self.cells = {c.id: c for c in cells}
        self.placements = placements
        self._database = database
        self._measure = measure
        self._holds = holds
        self._clock = clock
        self._sizes: dict[str, tuple[float, int]] = {}
        self._lock = Lock()

    def database(self, cell_id: str) -> Database:
        """The application role's database of one cell (a process keeps one pool per cell)."""
        cell = self.cells.get(cell_id)
        if cell is None:
            raise ConfigurationError(f"the placement map names cell {cell_id!r}, which DATABASE_CELLS lacks")
        return self._database(cell)

    def cell_of(self, user_id: str) -> str:
        """The user's cell: the map's; for a user it has never seen, placed now: on the first cell when that holds
        their memory or chats (a user of the deployment from before it had cells: the first cell is its database),
        else on the cell with the most room."""
        placed = self.placements.get(user_id)
        if placed is None:
            first = next(iter(self.cells))
            cell = first if self._holds(self.database(first), user_id) else self.roomiest()
            placed = self.placements.place(user_id, cell)
            logger.info("user placed", extra={"step": "cells.placed", "cell": placed.cell})
        return placed.cell

    def database_for(self, user_id: str) -> Database:
        return self.database(self.cell_of(user_id))

    def room_bytes(self, cell_id: str) -> float:
        """Capacity less what the cell holds (measured at most every ROOM_MAX_AGE_S seconds)."""
        now = self._clock()
        with self._lock:
            measured = self._sizes.get(cell_id)
        if measured is None or now - measured[0] > ROOM_MAX_AGE_S:
            measured = (now, self._measure(self.database(cell_id)))
            with self._lock:
                self._sizes[cell_id] = measured
        return self.cells[cell_id].capacity_gb * 1e9 - measured[1]

    def roomiest(self) -> str:
        """The cell with the most room (the first of equals, in DATABASE_CELLS' order)."""
        return max(self.cells, key=lambda cell_id: (self.room_bytes(cell_id), -list(self.cells).index(cell_id)))
