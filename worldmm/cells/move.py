"""Moving one user between database cells (`worldmm cells move`): copy, verify, switch the map, erase the old copy.

The steps, each safe to run again, so a move killed anywhere is finished by running the command again
(bench/crash_cells.py kills it at every step):

1. begin: the map marks the user as moving to the target (`PlacementMap.begin_move`).
2. fence: in the source cell the user is recorded as `moving` under their exclusive advisory lock, which
   waits for every unit of work of theirs still open; from then on a unit of work for them on the source
   is a UserMovingError (503, Retry-After) before it reads or writes anything (migration 0018).
3. copy: one transaction on the target erases whatever an earlier, unfinished copy left and copies every
   table with a `user_id` column, row for row (COPY out of the source, COPY into a temporary table,
   insert into the table: row-level security holds), with triggers off as in a replica, so the copy is
   the source's rows and nothing the triggers would add; the generation sequences are moved past the copied
   generations.
4. verify: per table, the number of rows and a checksum of their text (a sum of per-row MD5 prefixes, so
   the order does not matter) are the same in both cells, or the move stops here.
5. switch: the map points at the target; the target's record of an earlier departure of the user is
   deleted and the source's becomes `moved`: a function that resolved the source before the switch gets a
   503 and its retry goes to the target.
6. erase: the user's rows in the source go in one transaction; the graph cache keys of the user go.
7. finish: the map's move mark is cleared.

The mover connects as each cell's owner (`databaseAdminUrl`, an operator's setting) and sets `app.user_id`
in every transaction, so row-level security still limits every statement to the one user where it binds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger
from sqlalchemy.orm import Session

from worldmm.cells.port import Placement, PlacementConflict, PlacementMap
from worldmm.config import CellSettings
from worldmm.crashpoints import crash_point
from worldmm.db.engine import USER_SETTING, Database
from worldmm.db.queries import cells as queries
from worldmm.db.queries.forget import delete_user_rows, user_table_names
from worldmm.errors import ConfigurationError, Conflict

logger = Logger(child=True)

PARENTS_FIRST = (
    "worldmm_segments",
    "worldmm_entities",
    "worldmm_triples",
    "worldmm_visual_embeddings",
    "worldmm_memory_history",
    "worldmm_entity_corrections",
    "worldmm_llm_usage",
    "worldmm_chats",
    "worldmm_chat_messages",
)
"""Tables a row of which another's rows point at come first; any other `user_id` table follows, sorted."""

GENERATION_SEQUENCES = {
    "worldmm_graph_generations": "worldmm_graph_generation_seq",
    "worldmm_segment_generations": "worldmm_segment_generation_seq",
}
"""Generation counters and the sequence each takes its values from (migrations 0005, 0009)."""


class MoveVerificationError(Conflict):
    """The copy in the target does not match the source: the map is not switched, nothing is erased."""


@dataclass
class MoveReport:
    """What a move did: the tables' row counts, the bytes copied, and how long each step took."""

    source: str
    target: str
    resumed_at: str
    rows: dict[str, int] = field(default_factory=dict)
    bytes_copied: int = 0
    step_s: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "resumedAt": self.resumed_at,
            "rows": dict(sorted(self.rows.items())),
            "bytesCopied": self.bytes_copied,
            "stepSeconds": {k: round(v, 3) for k, v in self.step_s.items()},
        }


@contextmanager
def _as_user(db: Database, user_id: str) -> Iterator[Session]:
    with db.unit_of_work(None) as session:
        queries.set_user(session, USER_SETTING, user_id)
        queries.use_utc(session)
        yield session


def user_tables(session: Session) -> list[str]:
    """Every table with a `user_id` column, parents first (the generation counters last)."""
    found = user_table_names(session)
    first = [t for t in PARENTS_FIRST if t in found]
    last = [t for t in GENERATION_SEQUENCES if t in found]
    return first + sorted(found - set(first) - set(last)) + last


def table_checksums(session: Session, user_id: str) -> dict[str, tuple[int, int]]:
    """Per user table (generation counters aside): rows and the sum of their text's MD5 prefixes."""
    sums: dict[str, tuple[int, int]] = {}
    for table in user_tables(session):
        if table in GENERATION_SEQUENCES:
            continue
        sums[table] = queries.table_checksum(session, table, queries.copied_columns(session, table), user_id)
    return sums


def _delete_user(session: Session, user_id: str) -> dict[str, int]:
    deleted: dict[str, int] = {}
    tables = user_tables(session)
    children_first = [t for t in reversed(tables) if t not in GENERATION_SEQUENCES]
    for table in children_first + [t for t in tables if t in GENERATION_SEQUENCES]:
        deleted[table] = delete_user_rows(session, table, user_id)
    return deleted


def owner_databases(cells: Iterable[CellSettings]) -> dict[str, Database]:
    """Every cell as its owner (`databaseAdminUrl`: an operator's environment only, never a function's), for the
    mover. The owner is not held by row-level security: the mover sets `app.user_id` in every transaction."""
    owners: dict[str, Database] = {}
    for cell in cells:
        if not cell.database_admin_url:
            raise ConfigurationError(f"cell {cell.id!r} has no databaseAdminUrl (the owner's, for the mover)")
        owners[cell.id] = Database(cell.database_admin_url, pool_size=2, max_overflow=2)
    return owners


class CellMover:
    """Moves users between cells as the cells' owner, with the placement map's conditional steps."""

    def __init__(
        self,
        placements: PlacementMap,
        owners: dict[str, Database],
        *,
        erase_cached: Callable[[str], None] | None = None,
    ) -> None:
        self.placements = placements
        self.owners = owners
        self._erase_cached = erase_cached or (lambda _user: None)

    def move(self, user_id: str, target: str) -> MoveReport:
        """Move `user_id` to `target`, or finish the move a crash left (the same target)."""
        if target not in self.owners:
            raise PlacementConflict(f"unknown cell {target!r}")
        placed = self.placements.get(user_id)
        if placed is None:
            raise PlacementConflict("the user is not placed on any cell")
        if placed.cell != target:
            return self._move_from(placed, target)
        if placed.moving_to != target:
            return MoveReport(placed.cell, target, resumed_at="done")
        # switched, not yet erased or finished: which cell it left is in the fences
        source = self._source_of(user_id, target)
        report = MoveReport(source or target, target, resumed_at="switched")
        self._after_switch(user_id, source, target, report)
        return report

    def _source_of(self, user_id: str, target: str) -> str | None:
        for cell, owner in self.owners.items():
            if cell == target:
                continue
            with owner.unit_of_work(None) as session:
                state = queries.departure_state(session, user_id, target)
            if state is not None:
                return cell
        return None

    def _move_from(self, placed: Placement, target: str) -> MoveReport:
        user_id, source = placed.user_id, placed.cell
        report = MoveReport(source, target, resumed_at="begun" if placed.moving_to == target else "start")
        started = time.perf_counter()
        self.placements.begin_move(user_id, source, target)
        crash_point("cells.move.begun")
        self._fence(user_id, source, target)
        crash_point("cells.move.fenced")
        report.step_s["fence"] = time.perf_counter() - started
        started = time.perf_counter()
        self._copy(user_id, source, target, report)
        crash_point("cells.move.copied")
        report.step_s["copy"] = time.perf_counter() - started
        started = time.perf_counter()
        self._verify(user_id, source, target)
        crash_point("cells.move.verified")
        report.step_s["verify"] = time.perf_counter() - started
        self.placements.switch(user_id, source, target)
        crash_point("cells.move.switched")
        self._after_switch(user_id, source, target, report)
        return report

    def _fence(self, user_id: str, source: str, target: str) -> None:
        with self.owners[source].unit_of_work(None) as session:
            queries.fence_departure(session, user_id, target)

    def _copy(self, user_id: str, source: str, target: str, report: MoveReport) -> None:
        with _as_user(self.owners[source], user_id) as src, _as_user(self.owners[target], user_id) as dst:
            queries.as_replica(dst)  # no trigger adds to the copy
            _delete_user(dst, user_id)  # what an earlier copy committed before its verify failed or was killed
            for table in user_tables(src):
                rows, copied = queries.copy_user_rows(src, dst, table, queries.copied_columns(src, table), user_id)
                report.rows[table] = rows
                report.bytes_copied += copied
                crash_point("cells.move.table_copied")
                sequence = GENERATION_SEQUENCES.get(table)
                if sequence is not None:  # a generation the target hands out later is never one copied now
                    queries.advance_generation_sequence(dst, sequence, table, user_id)

    def _verify(self, user_id: str, source: str, target: str) -> None:
        with _as_user(self.owners[source], user_id) as src:
            expected = table_checksums(src, user_id)
        with _as_user(self.owners[target], user_id) as dst:
            copied = table_checksums(dst, user_id)
        differ = sorted(t for t in expected.keys() | copied.keys() if expected.get(t) != copied.get(t))
        if differ:
            raise MoveVerificationError(f"the copy differs from the source in {', '.join(differ)}")

    def _after_switch(self, user_id: str, source: str | None, target: str, report: MoveReport) -> None:
        started = time.perf_counter()
        with self.owners[target].unit_of_work(None) as session:
            queries.delete_departure(session, user_id)
        if source is not None:
            with self.owners[source].unit_of_work(None) as session:
                queries.mark_departed(session, user_id)
            self._erase_cached(user_id)  # generations of the old cell's graphs are not the new cell's
            with _as_user(self.owners[source], user_id) as session:
                queries.as_replica(session)
                erased = _delete_user(session, user_id)
            logger.info("old copy erased", extra={"step": "cells.move.erased", "rows": sum(erased.values())})
            crash_point("cells.move.erased")
        report.step_s["erase"] = time.perf_counter() - started
        self.placements.finish(user_id, target)
        crash_point("cells.move.finished")
        logger.info("user moved", extra={"step": "cells.moved", "source": source, "target": target})
