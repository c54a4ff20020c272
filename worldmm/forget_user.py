"""Forget-me: erase one user's data from every store, nothing of anyone else's, and keep an audit record.

Operators run it (`worldmm forget --user-id U`, or ForgetUserFunction with `{"userId": U}`); it is
idempotent, so a second run (after a failure, or to catch a window that was being ingested meanwhile)
erases what is left and finds nothing else.

Each store's adapter erases its own part (the ports below, chosen by the composition root); this module
orders them and erases the memory tables in PostgreSQL. What goes, in this order (each step finds its work
again on a re-run: what tells a re-run which sessions are the user's — the catalog entries and the
segments — goes only after the objects they point at):
1. The capture-window buffers of the user's sessions (capture state): no window of theirs closes any more.
2. The sessions' raw frames and audio: every object (S3: every version) under `sessions/{id}/`, for the
   sessions the catalog says are the user's, and for sessions of the user's segments the catalog does not
   know (never for a session the catalog gives to someone else). Local: the catalog entry (the session's
   `metadata.json`) goes with the folder.
3. The user's session catalog entries (aws: the sessions table items that still name the user), and their
   capture counters per day (aws: the same table's counter items; local: `capture-quota/{hash}/`). From then
   on an ingest, retrigger or DLQ event for those sessions is rejected (`unknown_session`) and an upload to
   them is ignored: a late window of the user is never re-created. Then the objects once more: anything that
   landed while steps 2-3 ran.
4. Every PostgreSQL row holding the user's id, in one transaction of the user's own unit of work: row-level
   security makes every other user's rows invisible to it, so they cannot be touched. That includes the
   graph and segment generations: both come from sequences, so a user of the same id who starts again can
   never present a generation a warm process cached for the erased memory.
5. The user's graph cache keys (Redis: exactly theirs, a key of user `a:b` is not user `a`'s).
6. The user's chats and their messages (aws: DynamoDB; local: PostgreSQL, already gone in step 4), and their
   allowance of model calls (aws: the allowances table; local: `worldmm_allowances`, gone in step 4).
7. Where the deployment recorded which database holds the user (with two or more database cells: the placement
   map's entry and the records of cells they were moved out of, once no function can need them: docs/cells.md),
   last, so a failed run finds the user's database again. Nothing with one database.

The audit row (`worldmm_forget_audit`) says who asked, when, whether it completed and how many items each
store lost; it holds a hash of the user id, never the id itself or any content.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger

from worldmm.crashpoints import crash_point
from worldmm.db.port import DatabasePorts
from worldmm.errors import BadRequest

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from worldmm.graph.cache.port import GraphCache
    from worldmm.ingest.catalog.port import SessionCatalog
    from worldmm.media.objects import ErasableObjectStore

logger = Logger(child=True)


class CaptureWindows(Protocol):
    """The capture state's window buffers (worldmm.capture's port; named here, forget-me does not import it)."""

    def erase_windows(
        self, user_id: str, session_ids: Iterable[str], only: Mapping[str, Set[int]] | None = None
    ) -> dict[str, int]: ...


class UserChats(Protocol):
    """The chat store (worldmm.chat's port; named here, forget-me does not import it)."""

    def erase_user(self, user_id: str) -> dict[str, int]: ...


class UserAllowances(Protocol):
    """The allowance store (worldmm.allowance's port; named here, forget-me does not import it)."""

    def erase_user(self, user_id: str) -> dict[str, int]: ...


class UserPlacement(Protocol):
    """Where the deployment records which database holds the user (the composition root's; named here, forget-me
    does not know how it is kept)."""

    def erase_user(self, user_id: str) -> dict[str, int]: ...


class ForgetPorts(DatabasePorts, Protocol):
    """The ports an erase uses: the database and every store holding user data, each adapter erasing its
    own part (the composition root's `Services` is one)."""

    @property
    def store(self) -> ErasableObjectStore: ...

    @property
    def sessions(self) -> SessionCatalog: ...

    @property
    def capture_state(self) -> CaptureWindows: ...

    @property
    def graph_cache(self) -> GraphCache: ...

    @property
    def chats(self) -> UserChats: ...

    @property
    def allowances(self) -> UserAllowances: ...

    @property
    def placement(self) -> UserPlacement: ...


# Tenant tables in the order their rows go (children first); any other table with a user_id column found in
# the schema is erased after them, and the generation counters last (the triggers on the deletes above
# write them). Those counters' values come from sequences and are never reused (migrations 0005, 0009).
ORDERED_TABLES = (
    "worldmm_chat_messages",
    "worldmm_chats",
    "worldmm_llm_usage",
    "worldmm_memory_history",
    "worldmm_visual_embeddings",
    "worldmm_triples",
    "worldmm_segments",
    "worldmm_entities",
)
GENERATION_TABLES = ("worldmm_graph_generations", "worldmm_segment_generations")

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Tally(Protocol):
    """Where an eraser counts what it deleted (`ForgetReport`, or a span erase's report)."""

    def add(self, store: str, count: int) -> None: ...


def tally(report: Tally, counts: Mapping[str, int]) -> None:
    """Add a port's erase counts (store name → items) to `report`."""
    for store, count in counts.items():
        report.add(store, count)


@dataclass
class ForgetReport:
    """What one erase did: items deleted per store (`postgres.<table>`, `s3.objects`, ...), no content."""

    user_hash: str
    requested_by: str
    started_at: datetime
    finished_at: datetime | None = None
    complete: bool = False
    deleted: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    def add(self, store: str, count: int) -> None:
        self.deleted[store] = self.deleted.get(store, 0) + count

    def as_dict(self) -> dict[str, Any]:
        return {
            "userHash": self.user_hash,
            "requestedBy": self.requested_by,
            "startedAt": self.started_at.isoformat(),
            "finishedAt": self.finished_at.isoformat() if self.finished_at else None,
            "complete": self.complete,
            "deleted": dict(sorted(self.deleted.items())),
            "error": self.error,
        }


def user_hash(user_id: str) -> str:
    """The audit's name for a user: SHA-256 of the id (whoever holds the id can find its erasures)."""
    return hashlib.sha256(f"worldmm-forget:{user_id}".encode()).hexdigest()


def check_user_id(user_id: str) -> str:
    """The user id to erase, or BadRequest (empty, too long, control characters)."""
    if not isinstance(user_id, str) or not 0 < len(user_id) <= 128 or _CONTROL.search(user_id):
        raise BadRequest("userId must be 1-128 printable characters")
    return user_id


def forget_user(services: ForgetPorts, user_id: str, *, requested_by: str = "operator") -> ForgetReport:
    """Erase `user_id`'s data from every store (see the module docstring) and write the audit row."""
    user_id = check_user_id(user_id)
    report = ForgetReport(user_hash(user_id), requested_by[:128] or "operator", datetime.now(UTC))
    started = time.perf_counter()
    logger.info("forget started", extra={"step": "forget.started", "user_hash": report.user_hash})
    try:
        catalog = services.sessions.user_sessions(user_id)
        segment_sessions = _segment_sessions(services, user_id)
        sessions = sorted(set(catalog) | _unclaimed(services, segment_sessions - set(catalog)))
        tally(report, services.capture_state.erase_windows(user_id, sessions))
        _erase_objects(services, sessions, report)
        crash_point("forget.objects_erased")
        tally(report, services.sessions.erase_user(user_id, catalog))
        crash_point("forget.catalog_erased")
        _erase_objects(services, sessions, report)  # uploads that landed while the catalog still named them
        _erase_postgres(services, user_id, report)
        crash_point("forget.postgres_erased")
        tally(report, services.graph_cache.erase_user(user_id))
        tally(report, services.chats.erase_user(user_id))
        tally(report, services.allowances.erase_user(user_id))
        crash_point("forget.stores_erased")
        tally(report, services.placement.erase_user(user_id))
        report.complete = True
    except Exception as exc:
        report.error = f"{type(exc).__name__}"[:256]
        raise
    finally:
        report.finished_at = datetime.now(UTC)
        _write_audit(services, report)
        logger.info(
            "forget finished",
            extra={
                "step": "forget.completed" if report.complete else "forget.failed",
                "user_hash": report.user_hash,
                "deleted": report.deleted,
                "elapsed_ms": round((time.perf_counter() - started) * 1000),
            },
        )
    return report


# --- sessions --------------------------------------------------------------------------------------


def _segment_sessions(services: ForgetPorts, user_id: str) -> set[str]:
    from worldmm.db.queries.forget import segment_session_ids

    with services.db.unit_of_work(user_id) as session:
        return segment_session_ids(session, user_id)


def _unclaimed(services: ForgetPorts, session_ids: set[str]) -> set[str]:
    """Of the user's segments' sessions the catalog did not list, those it gives to nobody else."""
    return {sid for sid in session_ids if _valid_prefix_id(sid) and services.sessions.get(sid) is None}


def _valid_prefix_id(session_id: str) -> bool:
    from worldmm.ingest.events import SESSION_ID_PATTERN

    return re.match(SESSION_ID_PATTERN, session_id) is not None


def _erase_objects(services: ForgetPorts, sessions: list[str], report: ForgetReport) -> None:
    tally(report, services.store.erase_prefixes(f"sessions/{sid}/" for sid in sessions if _valid_prefix_id(sid)))


def sweep_unclaimed_uploads(services: ForgetPorts, session_ids: set[str]) -> int:
    """Erase the objects of sessions the catalog gives to nobody: an upload that lands after its user was
    forgotten (a URL issued before the erase stays valid until it expires) is deleted, not kept. Uploads
    are presigned for catalogued sessions only, so nothing of a live session is ever swept. The count of
    objects (versions) deleted."""
    prefixes = [f"sessions/{sid}/" for sid in sorted(_unclaimed(services, session_ids))]
    swept = sum(services.store.erase_prefixes(prefixes).values())
    if swept:
        logger.info("late uploads swept", extra={"step": "forget.late-uploads-swept", "objects": swept})
    return swept


# --- PostgreSQL ------------------------------------------------------------------------------------


def _user_tables(session: Session) -> list[str]:
    """Every table of the schema with a user_id column: the known ones in order, then any other."""
    from worldmm.db.queries.forget import user_table_names

    found = user_table_names(session)
    ordered = [t for t in ORDERED_TABLES if t in found]
    others = sorted(found - set(ORDERED_TABLES) - set(GENERATION_TABLES))
    return ordered + others + [t for t in GENERATION_TABLES if t in found]


def _erase_postgres(services: ForgetPorts, user_id: str, report: ForgetReport) -> None:
    from worldmm.db.queries.forget import delete_user_rows

    with services.db.unit_of_work(user_id) as session:
        for table in _user_tables(session):
            report.add(f"postgres.{table}", delete_user_rows(session, table, user_id))


# --- audit -----------------------------------------------------------------------------------------


def _write_audit(services: ForgetPorts, report: ForgetReport) -> None:
    """One append-only row: hash, who, when, counts. Never raises over the erase's own outcome."""
    from worldmm.db.queries.forget import insert_forget_audit

    try:
        with services.db.unit_of_work(None) as session:
            insert_forget_audit(
                session,
                user_hash=report.user_hash,
                requested_by=report.requested_by,
                started_at=report.started_at,
                finished_at=report.finished_at or datetime.now(UTC),
                complete=report.complete,
                deleted_json=json.dumps(report.deleted),
                error=report.error,
            )
    except Exception:
        logger.exception("forget audit not written", extra={"step": "forget.audit_failed"})
        if report.complete:
            raise
