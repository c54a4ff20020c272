"""A recording session's metadata: its start time (segment timestamps) and its windows (retrigger).

aws: the DynamoDB sessions table item `{sessionId, userId, createdAt, windowCount?, frameCounts?}`
(`DynamoSessionCatalog`, worldmm.ingest.catalog.dynamo). local: `sessions/{sessionId}/metadata.json` in the
object store (`userId`, createdAt or video_start_ms), and the window prefixes present there
(`StoreSessionCatalog`, worldmm.ingest.catalog.local). tests/integration/test_session_catalog_contract.py
runs one contract over both, tests/integration/test_erase_user_contract.py their erase.

The catalog's store also holds each user's capture counters per day (aws: sessions-table items; local: a
prefix of the object store); the catalog erases them with the user's entries.

The catalog is also who owns a session: an ingest or retrigger event is carried out only for the session's
own user (`owned_session`); the event's `userId` alone is never trusted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from aws_lambda_powertools import Logger

from worldmm.ingest.events import MAX_WINDOW_INDEX, EventRejected
from worldmm.ingest.steplog import log_step

logger = Logger(child=True)


class SessionPorts(Protocol):
    """The port session lookups use: the deployment's session catalog (chosen by the composition root)."""

    @property
    def sessions(self) -> SessionCatalog: ...


@dataclass(frozen=True)
class SessionInfo:
    """What the session catalog knows; every field may be missing."""

    session_id: str
    created_at: datetime | None = None
    window_count: int | None = None
    frame_counts: dict[int, int] = field(default_factory=dict)
    ended: bool = False
    user_id: str | None = None  # the owner (`userId`); None when the catalog does not say

    def windows(self) -> dict[int, int]:
        """Window index → frame count (0 when unknown: the ingest lists the window's prefix)."""
        indices = set(self.frame_counts)
        if self.window_count is not None:
            indices.update(range(self.window_count))
        return {i: self.frame_counts.get(i, 0) for i in sorted(indices)}


class SessionCatalog(Protocol):
    """Sessions by id: the sessions table (aws) or the object store's metadata.json (local)."""

    def get(self, session_id: str) -> SessionInfo | None:
        """The session's entry (its owner in `user_id` when recorded), or None when the catalog has no such session.

        A catalog that cannot be read raises (the caller retries); it never answers None for that.
        """
        ...

    def user_sessions(self, user_id: str) -> list[str]:
        """The ids of the sessions whose entry names `user_id` as owner, sorted (forget-me)."""
        ...

    def erase_user(self, user_id: str, session_ids: Iterable[str]) -> dict[str, int]:
        """Erase the entries of `session_ids` (each only while it still names `user_id`) and the user's capture
        counters; how many items went, per store of the forget audit.

        An entry is what tells a re-run of forget-me that a session is the user's: erase it only after the
        session's objects (locally the entry is the session folder's metadata.json, and goes with the folder).
        """
        ...


def parse_timestamp(value: Any) -> datetime | None:
    """ISO 8601 text, or epoch seconds / milliseconds (a number or numeric text), as an aware datetime."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float, Decimal)):
        number = float(value)
        return datetime.fromtimestamp(number / 1000 if number > 1e11 else number, tz=UTC)
    if isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            return parse_timestamp(float(text))
        except ValueError:
            pass
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def info_from_item(session_id: str, item: dict[str, Any]) -> SessionInfo:
    """SessionInfo from a DynamoDB item or a metadata.json document (camelCase or snake_case)."""
    created = parse_timestamp(item.get("createdAt", item.get("created_at")))
    if created is None:
        created = parse_timestamp(item.get("video_start_ms", item.get("videoStartMs")))
    counts: dict[int, int] = {}
    raw_counts = item.get("frameCounts", item.get("frame_counts")) or {}
    if isinstance(raw_counts, dict):
        for k, v in raw_counts.items():
            index, count = _as_int(k), _as_int(v)
            if index is not None and count is not None:
                counts[index] = count
    window_count = _as_int(item.get("windowCount", item.get("window_count")))
    if window_count is not None:  # a catalog entry cannot make retrigger fan out past the event bound
        window_count = max(0, min(window_count, MAX_WINDOW_INDEX + 1))
    counts = {i: c for i, c in counts.items() if 0 <= i <= MAX_WINDOW_INDEX}
    ended = bool(item.get("endedAt", item.get("ended_at")))
    owner = item.get("userId", item.get("user_id"))
    user_id = owner if isinstance(owner, str) and owner else None
    return SessionInfo(session_id, created, window_count, counts, ended, user_id)


def session_info(
    services: SessionPorts, session_id: str, catalog: SessionCatalog | None = None
) -> SessionInfo | None:
    """The session's catalog entry, or None (missing or the lookup failed: logged)."""
    try:
        return (catalog or services.sessions).get(session_id)
    except Exception as exc:
        logger.warning("session_lookup_failed", extra={"session_id": session_id, "error": str(exc)})
        return None


def owned_session(services: SessionPorts, session_id: str, user_id: str) -> SessionInfo:
    """The session's catalog entry when it exists and belongs to `user_id`; EventRejected otherwise.

    A catalog that cannot be read raises its own error (transient: the event is retried), never a rejection.
    """
    info = services.sessions.get(session_id)
    if info is None:
        raise EventRejected("unknown_session", "session not found or not the user's")
    if info.user_id is None or info.user_id != user_id:
        raise EventRejected("session_not_owned", "session not found or not the user's")
    return info


def created_at_of(info: SessionInfo) -> datetime:
    """When the session started; `datetime.now()` with a logged fallback when the catalog does not say."""
    if info.created_at is not None:
        return info.created_at
    log_step(logger, "session_created_at_fallback", level="warning", session_id=info.session_id)
    return datetime.now(UTC)


def window_span(created_at: datetime, window_index: int, window_seconds: int) -> tuple[datetime, datetime]:
    """A window's [start, end): createdAt + index × window length."""
    start = created_at + timedelta(seconds=window_index * window_seconds)
    return start, start + timedelta(seconds=window_seconds)
