"""What the cells record of a user outside their memory, and forget-me's erase of it.

Two records name a user beside their rows: the placement map's entry (which cell holds them) and, in each cell
they were moved out of, a `moved` departure record (migration 0018). The record must outlive every function
that resolved the old cell before the switch — Lambda runs at most 900 s — so that none of them reads or
writes the old copy; after that nothing needs it. `worldmm_prune_cell_departures` (migration 0020) deletes a
record once it is older than CELL_DEPARTURE_KEEP_S (never under 900 s) and the cell holds no row of the
user; the reaper's sweep prunes every such record every 15 minutes, forget-me its user's at once.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from worldmm.cells.port import PlacementConflict
from worldmm.cells.router import CellRouter
from worldmm.db.queries.cells import prune_departures

logger = Logger(child=True)


class NoCellRecords:
    """One database, no cells: nothing records where a user lives."""

    def erase_user(self, user_id: str) -> dict[str, int]:
        return {}

    def prune_departures(self) -> int:
        return 0


class CellRecords:
    """The placement map's entries and the cells' departure records, over every cell of the deployment."""

    def __init__(self, router: CellRouter, keep_s: int) -> None:
        self.router = router
        self.keep_s = keep_s

    def _prune(self, user_id: str | None) -> int:
        pruned = 0
        for cell_id in self.router.cells:
            with self.router.database(cell_id).unit_of_work(None) as session:
                pruned += prune_departures(session, user_id, self.keep_s)
        return pruned

    def erase_user(self, user_id: str) -> dict[str, int]:
        """Forget-me's last step, once the user's rows are erased: their departure records older than the keep
        time in every cell, then their placement. A user whose move is unfinished (begun, or killed before the
        map was cleared: the old copy may still be there) is a PlacementConflict before anything is deleted:
        finish the move (`worldmm cells move` again), then run forget-me again."""
        placed = self.router.placements.get(user_id)
        if placed is not None and placed.moving_to is not None:
            raise PlacementConflict("the user is being moved: finish the move, then forget them")
        departures = self._prune(user_id)
        placement = self.router.placements.forget(user_id)
        return {"cells.departures": departures, "cells.placement": int(placement)}

    def prune_departures(self) -> int:
        """The sweep: every departure record no function can need any more, in every cell."""
        pruned = self._prune(None)
        if pruned:
            logger.info("departure records pruned", extra={"step": "cells.departures_pruned", "records": pruned})
        return pruned
