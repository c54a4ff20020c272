"""Forget-me: erase one user's data from every store, nothing of anyone else's, and keep an audit record.

Operators run it (`worldmm forget --user-id U`, or ForgetUserFunction with `{"userId": U}`); it is
idempotent, so a second run (after a failure, or to catch a window that was being ingested meanwhile)
erases what is left and finds nothing else.

What goes, in this order (each step finds its work again on a re-run: what tells a re-run which sessions are
the user's — the catalog entries and the segments — goes only after the objects they point at):
1. The capture-window buffer rows of the user's sessions (aws): no window of theirs closes any more.
2. The sessions' raw frames and audio: every object (S3: every version) under `sessions/{id}/`, for the
   sessions the catalog says are the user's, and for sessions of the user's segments the catalog does not
   know (never for a session the catalog gives to someone else). Local: the catalog entry (the session's
   `metadata.json`) goes with the folder.
3. The user's session catalog entries (aws: the sessions table rows whose `userId` is the user), then their
   capture counters per day (aws: the same table's `quota#…` items; local: `capture-quota/{hash}/`). From then
   on an ingest, retrigger or DLQ event for those sessions is rejected (`unknown_session`) and an upload to
   them is ignored: a late window of the user is never re-created. Then the objects once more: anything that
   landed while steps 2-3 ran.
4. Every PostgreSQL row holding the user's id, in one transaction of the user's own unit of work: row-level
   security makes every other user's rows invisible to it, so they cannot be touched. That includes the
   graph and segment generations: both come from sequences, so a user of the same id who starts again can
   never present a generation a warm process cached for the erased memory.
5. The user's graph keys in Redis (exactly theirs: a key of user `a:b` is not user `a`'s).
6. The user's chats and their messages (aws: DynamoDB; local: PostgreSQL, step 4).

The audit row (`worldmm_forget_audit`) says who asked, when, whether it completed and how many items each
store lost; it holds a hash of the user id, never the id itself or any content.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger

from worldmm.config import Profile
from worldmm.crashpoints import crash_point
from worldmm.db.port import DatabasePorts
from worldmm.errors import BadRequest

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from worldmm.ingest.sessions.port import SessionCatalog
    from worldmm.media.objects import ObjectStore

logger = Logger(child=True)


class ForgetPorts(DatabasePorts, Protocol):
    """The ports an erase uses: the database, the object store, the session catalog, and the settings naming
    the tables and Redis (the composition root's `Services` is one)."""

    @property
    def store(self) -> ObjectStore: ...

    @property
    def sessions(self) -> SessionCatalog: ...


FORGET_AUDIT_TABLE = "worldmm_forget_audit"

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


class ErasableStore(Protocol):
    """An object store that can erase a prefix (both adapters of the ObjectStore port can)."""

    def get(self, key: str) -> bytes: ...

    def list(self, prefix: str) -> list[str]: ...

    def delete_prefix(self, prefix: str) -> int: ...


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
        catalog, quotas = _split_quotas(_catalog_sessions(services, user_id))
        segment_sessions = _segment_sessions(services, user_id)
        sessions = sorted(set(catalog) | _unclaimed(services, segment_sessions - set(catalog)))
        _erase_capture_windows(services, user_id, sessions, report)
        _erase_objects(services, sessions, report)
        crash_point("forget.objects_erased")
        _erase_catalog(services, user_id, catalog, report)
        crash_point("forget.catalog_erased")
        _erase_objects(services, sessions, report)  # uploads that landed while the catalog still named them
        _erase_capture_quotas(services, user_id, quotas, report)
        _erase_postgres(services, user_id, report)
        crash_point("forget.postgres_erased")
        _erase_redis(services, user_id, report)
        _erase_dynamo_chats(services, user_id, report)
        crash_point("forget.stores_erased")
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


def _dynamo() -> Any:
    from worldmm.aws import aws_client

    return aws_client("dynamodb")


def _conditional_failure(exc: Exception) -> bool:
    response = getattr(exc, "response", None) or {}
    return bool(response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


def _catalog_sessions(services: ForgetPorts, user_id: str) -> list[str]:
    """The sessions the catalog says are the user's (aws: the sessions table; local: metadata.json)."""
    if services.settings.worldmm_profile == Profile.AWS:
        client = _dynamo()
        found: list[str] = []
        for page in client.get_paginator("scan").paginate(
            TableName=services.settings.sessions_table,
            FilterExpression="userId = :u",
            ExpressionAttributeValues={":u": {"S": user_id}},
            ProjectionExpression="sessionId",
            ConsistentRead=True,
        ):
            found.extend(item["sessionId"]["S"] for item in page.get("Items", []))
        return sorted(found)
    store = services.store
    owned: list[str] = []
    for key in store.list("sessions/"):
        parts = key.split("/")
        if len(parts) != 3 or parts[2] != "metadata.json":
            continue
        try:
            doc = json.loads(store.get(key))
        except (ValueError, KeyError):
            continue
        if isinstance(doc, dict) and doc.get("userId", doc.get("user_id")) == user_id:
            owned.append(parts[1])
    return sorted(owned)


def _split_quotas(items: list[str]) -> tuple[list[str], list[str]]:
    """The user's sessions-table items: their sessions, and their capture counters (aws; none locally)."""
    from worldmm.ingest.sessions.port import QUOTA_ID_PREFIX

    return (
        [i for i in items if not i.startswith(QUOTA_ID_PREFIX)],
        [i for i in items if i.startswith(QUOTA_ID_PREFIX)],
    )


def _erase_capture_quotas(services: ForgetPorts, user_id: str, quotas: list[str], report: ForgetReport) -> None:
    """The user's per-day capture counters: aws, their sessions-table items (each only while it names the user);
    local, their `capture-quota/` prefix in the object store."""
    if services.settings.worldmm_profile != Profile.AWS:
        from worldmm.ingest.sessions.port import capture_quota_prefix

        store: ErasableStore = services.store  # type: ignore[assignment]
        report.add("objects.capture_quotas", store.delete_prefix(capture_quota_prefix(user_id)))
        return
    if erased := _delete_session_items(services, user_id, quotas):
        report.add("dynamodb.capture_quotas", erased)


def _segment_sessions(services: ForgetPorts, user_id: str) -> set[str]:
    from sqlalchemy import text

    with services.db.unit_of_work(user_id) as session:
        rows = session.execute(  # scoped by user_id as well as by row-level security
            text("SELECT DISTINCT session_id FROM worldmm_segments WHERE user_id = :user_id"), {"user_id": user_id}
        ).scalars()
        return {str(r) for r in rows}


def _unclaimed(services: ForgetPorts, session_ids: set[str]) -> set[str]:
    """Of the user's segments' sessions the catalog did not list, those it gives to nobody else."""
    return {sid for sid in session_ids if _valid_prefix_id(sid) and services.sessions.get(sid) is None}


def _valid_prefix_id(session_id: str) -> bool:
    from worldmm.ingest.events import SESSION_ID_PATTERN

    return re.match(SESSION_ID_PATTERN, session_id) is not None


def _erase_catalog(services: ForgetPorts, user_id: str, sessions: list[str], report: ForgetReport) -> None:
    """aws: the sessions table rows (each only while it still names the user). Local: the catalog entry is
    the session's metadata.json, which went with the session's folder (step 2)."""
    if services.settings.worldmm_profile != Profile.AWS:
        return
    if erased := _delete_session_items(services, user_id, sessions):
        report.add("dynamodb.sessions", erased)


def _delete_session_items(services: ForgetPorts, user_id: str, keys: list[str]) -> int:
    """Delete the sessions-table items `keys`, each only while it still names the user; how many went."""
    client = _dynamo()
    deleted = 0
    for key in keys:
        try:
            client.delete_item(
                TableName=services.settings.sessions_table,
                Key={"sessionId": {"S": key}},
                ConditionExpression="userId = :u",
                ExpressionAttributeValues={":u": {"S": user_id}},
            )
        except Exception as exc:
            if not _conditional_failure(exc):
                raise
            continue
        deleted += 1
    return deleted


def _erase_capture_windows(
    services: ForgetPorts, user_id: str, sessions: list[str], report: Tally, only: dict[str, set[int]] | None = None
) -> None:
    """The capture-window buffer rows of `sessions` (aws); with `only`, just those windows of each session."""
    if services.settings.worldmm_profile != Profile.AWS or not sessions:
        return
    client = _dynamo()
    table = services.settings.capture_windows_table
    for sid in sessions:
        for page in client.get_paginator("query").paginate(
            TableName=table,
            KeyConditionExpression="sessionId = :s",
            ExpressionAttributeValues={":s": {"S": sid}},
            ProjectionExpression="sessionId, windowIndex",
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                if only is not None and int(item["windowIndex"]["N"]) not in only.get(sid, set()):
                    continue
                try:
                    client.delete_item(
                        TableName=table,
                        Key={"sessionId": item["sessionId"], "windowIndex": item["windowIndex"]},
                        ConditionExpression="attribute_not_exists(userId) OR userId = :u",
                        ExpressionAttributeValues={":u": {"S": user_id}},
                    )
                except Exception as exc:
                    if not _conditional_failure(exc):
                        raise
                    continue
                report.add("dynamodb.capture_windows", 1)


def _erase_objects(services: ForgetPorts, sessions: list[str], report: ForgetReport) -> None:
    store: ErasableStore = services.store  # type: ignore[assignment]
    label = "s3.objects" if services.settings.worldmm_profile == Profile.AWS else "objects.files"
    for sid in sessions:
        if _valid_prefix_id(sid):
            report.add(label, store.delete_prefix(f"sessions/{sid}/"))


def sweep_unclaimed_uploads(services: ForgetPorts, session_ids: set[str]) -> int:
    """Erase the objects of sessions the catalog gives to nobody: an upload that lands after its user was
    forgotten (a URL issued before the erase stays valid until it expires) is deleted, not kept. Uploads
    are presigned for catalogued sessions only, so nothing of a live session is ever swept. The count of
    objects (versions) deleted."""
    store: ErasableStore = services.store  # type: ignore[assignment]
    swept = 0
    for sid in sorted(_unclaimed(services, session_ids)):
        swept += store.delete_prefix(f"sessions/{sid}/")
    if swept:
        logger.info("late uploads swept", extra={"step": "forget.late-uploads-swept", "objects": swept})
    return swept


# --- PostgreSQL ------------------------------------------------------------------------------------


def _user_tables(session: Session) -> list[str]:
    """Every table of the schema with a user_id column: the known ones in order, then any other."""
    from sqlalchemy import text

    found = set(
        session.execute(
            text(
                "SELECT c.table_name FROM information_schema.columns c "
                "JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
                "WHERE c.table_schema = current_schema() AND c.column_name = 'user_id' "
                "AND t.table_type = 'BASE TABLE'"
            )
        ).scalars()
    )
    ordered = [t for t in ORDERED_TABLES if t in found]
    others = sorted(found - set(ORDERED_TABLES) - set(GENERATION_TABLES))
    return ordered + others + [t for t in GENERATION_TABLES if t in found]


def _erase_postgres(services: ForgetPorts, user_id: str, report: ForgetReport) -> None:
    from sqlalchemy import text

    with services.db.unit_of_work(user_id) as session:
        for table in _user_tables(session):
            # The table names come from the schema itself; the user is a bound parameter, and row-level
            # security limits the statement to the user's rows whatever it says.
            result = session.execute(text(f'DELETE FROM "{table}" WHERE user_id = :u'), {"u": user_id})
            report.add(f"postgres.{table}", int(getattr(result, "rowcount", 0) or 0))


# --- Redis -----------------------------------------------------------------------------------------


def user_graph_keys(client: Any, user_id: str) -> list[bytes]:
    """The user's graph cache keys (graphs, generations, snapshots), exactly: see `USER_KEY_REST`."""
    from worldmm.graph.cache.port import USER_KEY_REST  # not at import: the capture functions' packages hold no SQL

    prefix = f"worldmm:graph:{user_id}:"
    pattern = re.sub(r"([*?\[\]\\])", r"\\\1", prefix) + "*"
    keys: list[bytes] = []
    for key in client.scan_iter(match=pattern, count=500):
        raw = key if isinstance(key, bytes) else str(key).encode()
        rest = raw.decode("utf-8", "replace")[len(prefix) :]
        if USER_KEY_REST.match(rest):
            keys.append(raw)
    return keys


def _erase_redis(services: ForgetPorts, user_id: str, report: Tally) -> None:
    if not services.settings.redis_url:
        return
    import redis

    client = redis.Redis.from_url(
        services.settings.redis_url,
        socket_connect_timeout=services.settings.redis_timeout_s,
        socket_timeout=max(services.settings.redis_timeout_s, 5.0),
    )
    try:
        keys = user_graph_keys(client, user_id)
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
        report.add("redis.keys", len(keys))
    finally:
        client.close()


# --- DynamoDB chats --------------------------------------------------------------------------------


def _erase_dynamo_chats(services: ForgetPorts, user_id: str, report: ForgetReport) -> None:
    if services.settings.worldmm_profile != Profile.AWS:
        return  # locally the chats are PostgreSQL tables, erased above
    client = _dynamo()
    chats, messages = services.settings.chats_table, services.settings.messages_table
    chat_ids: list[str] = []
    for page in client.get_paginator("query").paginate(
        TableName=chats,
        KeyConditionExpression="user_id = :u",
        ExpressionAttributeValues={":u": {"S": user_id}},
        ProjectionExpression="chat_id",
        ConsistentRead=True,
    ):
        chat_ids.extend(item["chat_id"]["S"] for item in page.get("Items", []))
    for chat_id in chat_ids:
        keys: list[dict[str, Any]] = []
        for page in client.get_paginator("query").paginate(
            TableName=messages,
            KeyConditionExpression="chat_id = :c",
            ExpressionAttributeValues={":c": {"S": chat_id}},
            ProjectionExpression="chat_id, message_id, user_id",
            ConsistentRead=True,
        ):
            # A chat's messages are its owner's; the user_id check keeps that true even for a bad row.
            keys.extend(
                {"chat_id": item["chat_id"], "message_id": item["message_id"]}
                for item in page.get("Items", [])
                if item.get("user_id", {}).get("S", user_id) == user_id
            )
        _batch_delete(client, messages, keys)
        report.add("dynamodb.messages", len(keys))
        client.delete_item(TableName=chats, Key={"user_id": {"S": user_id}, "chat_id": {"S": chat_id}})
        report.add("dynamodb.chats", 1)


def _batch_delete(client: Any, table: str, keys: list[dict[str, Any]]) -> None:
    for start in range(0, len(keys), 25):
        requests: dict[str, Any] = {table: [{"DeleteRequest": {"Key": k}} for k in keys[start : start + 25]]}
        for attempt in range(8):
            unprocessed = client.batch_write_item(RequestItems=requests).get("UnprocessedItems") or {}
            if not unprocessed:
                break
            requests = unprocessed
            time.sleep(min(2.0, 0.05 * 2**attempt))
        else:
            raise RuntimeError(f"{table}: deletes left unprocessed after retries")


# --- audit -----------------------------------------------------------------------------------------


def _write_audit(services: ForgetPorts, report: ForgetReport) -> None:
    """One append-only row: hash, who, when, counts. Never raises over the erase's own outcome."""
    from sqlalchemy import text

    try:
        with services.db.unit_of_work(None) as session:
            session.execute(
                text(
                    f"INSERT INTO {FORGET_AUDIT_TABLE} "
                    "(user_hash, requested_by, started_at, finished_at, complete, deleted, error) "
                    "VALUES (:h, :by, :started, :finished, :complete, CAST(:deleted AS jsonb), :error)"
                ),
                {
                    "h": report.user_hash,
                    "by": report.requested_by,
                    "started": report.started_at,
                    "finished": report.finished_at or datetime.now(UTC),
                    "complete": report.complete,
                    "deleted": json.dumps(report.deleted),
                    "error": report.error,
                },
            )
    except Exception:
        logger.exception("forget audit not written", extra={"step": "forget.audit_failed"})
        if report.complete:
            raise
