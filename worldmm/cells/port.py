"""The placement map port: which cell holds a user, and the conditional steps of a move.

Adapters: `DynamoPlacementMap` (aws: one item per user, conditional writes) and `PostgresPlacementMap`
(local: `worldmm_cell_placements` in the first cell, migration 0018). tests/integration/
test_placement_map_contract.py is the contract both meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from worldmm.errors import Conflict


@dataclass(frozen=True)
class Placement:
    """Where a user lives: `cell`, and while a move is under way the cell it goes to (`moving_to`)."""

    user_id: str
    cell: str
    moving_to: str | None = None


class PlacementConflict(Conflict):
    """A move step's condition does not hold (the user is elsewhere, or moving to another cell)."""


class PlacementMap(Protocol):
    def get(self, user_id: str) -> Placement | None:
        """The user's placement, read consistently; None for a user never placed."""
        ...

    def place(self, user_id: str, cell: str) -> Placement:
        """Place a new user on `cell` unless they are placed already: the placement stored (of two at once,
        the first)."""
        ...

    def begin_move(self, user_id: str, source: str, target: str) -> Placement:
        """Mark the user as moving from `source` to `target`; PlacementConflict unless they are on `source` and
        not moving elsewhere (again after a crash: the same placement)."""
        ...

    def switch(self, user_id: str, source: str, target: str) -> Placement:
        """Point the user at `target`, still marked moving (the old copy is not erased yet); PlacementConflict
        unless they are moving from `source` to `target` or already switched."""
        ...

    def finish(self, user_id: str, target: str) -> Placement:
        """Clear the move mark of a user on `target`; PlacementConflict when they are not there."""
        ...

    def forget(self, user_id: str) -> bool:
        """Delete the user's placement (forget-me's last step): whether there was one; PlacementConflict, and
        nothing deleted, while a move of theirs is under way."""
        ...
