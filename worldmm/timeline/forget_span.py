"""Forget a span: erase what the caller recorded in [from, to) (or in one session) from every store.

`DELETE /memories?from=&to=`, `DELETE /sessions/{id}` and the MCP tool `forget_span` end here. Order (each
step finds its work again on a re-run, so the erase is idempotent and a failed one is finished by the next):

1. The tombstone (`worldmm_forgotten_spans`, also the audit row: who, when, counts, never content) is
   committed under the user's forget lock (`worldmm.db.tombstones`): from then on a window of the span is
   refused at claim, and the refusing ingest erases what it brought (`worldmm.ingest.window`).
2. The raw objects of every window of the span: the window prefixes (S3: every version) of the span's
   windows, and of each index of the span in the sessions those windows belong to (uploaded, not ingested
   yet). For a session: everything under `sessions/{id}/` but its catalog entry (`metadata.json`, locally),
   which keeps ownership checks answering 403 to anyone else.
3. PostgreSQL, one transaction of the user's unit of work (row-level security, and `user_id` in every
   statement): the voices a recording overlapping the span named (`worldmm.memory.voices`); consolidation
   history, triples (episodic and semantic) and visual embeddings of the span's segments; semantic facts
   that a span segment had invalidated are valid again (the evidence is gone); the windows; each summary
   overlapping the span is deleted when no window of it is left, else emptied (caption, transcript,
   embedding, triples) and marked `failed` so the reaper re-summarises it from what remains; entities no
   triple or alias names any more; the app events (outbox) of the span's windows, or of the whole session.
   The deletes bump the graph and segment generations (triggers), so no warm cache serves the old graph or
   lexical index.
4. The user's cached graphs and lexical indexes (the graph cache port's `erase_user`, as forget-me does),
   the capture-window buffer rows of the span's windows (the capture state port), then the tombstone is
   marked complete with the counts.

Chat messages store question and answer text only (no citations), so nothing in them points into a span.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from aws_lambda_powertools import Logger

from worldmm.chat.models import iso_timestamp
from worldmm.crashpoints import crash_point
from worldmm.db.queries import erase
from worldmm.db.tombstones import lock_forgetting
from worldmm.errors import BadRequest, Forbidden
from worldmm.forget_user import ForgetPorts, tally
from worldmm.ingest.catalog.port import window_span
from worldmm.ingest.events import SESSION_ID_PATTERN
from worldmm.memory.entities import delete_unreferenced_entities
from worldmm.timeline.models import ForgetSpanQuery, ForgetSpanResult

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from worldmm.timeline.settings import TimelineSettings

logger = Logger(child=True)

SESSION_NOT_YOURS = "session not found or not yours"
FORGOTTEN_SUMMARY = "span forgotten: to be summarised again from what remains"
_WINDOW = re.compile(r"^sessions/[^/]+/window_(\d+)/")


@dataclass(frozen=True)
class SpanTarget:
    """What to erase: a time span [start, end) of every session, or one whole session."""

    start: datetime | None = None
    end: datetime | None = None
    session_id: str | None = None

    def __post_init__(self) -> None:
        if self.session_id is None and (self.start is None or self.end is None or not self.start < self.end):
            raise BadRequest("a span needs from < to")


@dataclass
class SpanReport:
    """What one span erase deleted, per store (`postgres.segments`, `objects`, ...); no content."""

    deleted: dict[str, int] = field(default_factory=dict)

    def add(self, store: str, count: int) -> None:
        if count:
            self.deleted[store] = self.deleted.get(store, 0) + count


class SpanForgetPorts(ForgetPorts, Protocol):
    """An erase's ports and the timeline's settings (the window length a span's windows are found by)."""

    @property
    def timeline_settings(self) -> TimelineSettings: ...


def forget_span(
    services: SpanForgetPorts, user_id: str, target: SpanTarget, *, requested_by: str = "api"
) -> SpanReport:
    """Erase `target` of `user_id` from every store (see the module docstring); idempotent."""
    started = time.perf_counter()
    if target.session_id is not None:
        check_session_owner(services, user_id, target.session_id)
    else:
        recorded = _recorded_part(target, datetime.now(UTC))
        if recorded is None:
            return SpanReport()  # all of it is still to come: nothing was recorded in it
        target = recorded
    report = SpanReport()
    audit_id = _write_tombstone(services, user_id, target, requested_by)
    crash_point("forget_span.tombstoned")
    found = _find(services, user_id, target)
    windows = _erase_objects(services, user_id, target, found, report)
    crash_point("forget_span.objects_erased")
    _erase_postgres(services, user_id, target, found, report)
    crash_point("forget_span.postgres_erased")
    if found.windows or found.summaries:  # the graph and lexical caches were built from them
        tally(report, services.graph_cache.erase_user(user_id))
    sessions = sorted(set(windows) | ({target.session_id} if target.session_id else set()))
    tally(report, services.capture_state.erase_windows(user_id, sessions, None if target.session_id else windows))
    crash_point("forget_span.stores_erased")
    _finish_tombstone(services, user_id, audit_id, report)
    logger.info(
        "span forgotten",
        extra={
            "step": "forget_span.completed",
            "deleted": report.deleted,
            "elapsed_ms": round((time.perf_counter() - started) * 1000),
        },
    )
    return report


def _recorded_part(target: SpanTarget, now: datetime) -> SpanTarget | None:
    """The part of a span up to now: only what was recorded can be forgotten, and a tombstone reaching into
    the future would silently drop memories not made yet (a window being recorded now starts before now)."""
    assert target.start is not None and target.end is not None
    end = min(target.end, now)
    return SpanTarget(target.start, end) if target.start < end else None


def check_session_owner(services: SpanForgetPorts, user_id: str, session_id: str) -> None:
    """Forbidden unless the session is the caller's: the catalog says so, or (catalog entry gone) the caller
    has memories of it or erased it before. Another user's session reads exactly as a missing one."""
    if not re.fullmatch(SESSION_ID_PATTERN, session_id):
        raise Forbidden(SESSION_NOT_YOURS)
    info = services.sessions.get(session_id)
    if info is not None:
        if info.user_id != user_id:
            raise Forbidden(SESSION_NOT_YOURS)
        return
    with services.db.unit_of_work(user_id) as session:
        known = erase.session_known(session, user_id, session_id)
    if not known:
        raise Forbidden(SESSION_NOT_YOURS)


# --- steps -----------------------------------------------------------------------------------------------


def _write_tombstone(services: SpanForgetPorts, user_id: str, target: SpanTarget, requested_by: str) -> int:
    """Step 1: the span's tombstone (and audit row), committed under the user's forget lock; its id."""
    with services.db.unit_of_work(user_id) as session:
        lock_forgetting(session, user_id)  # waits for claims in flight; later ones see the tombstone
        return erase.insert_span_tombstone(
            session, user_id, session_id=target.session_id, start=target.start, end=target.end,
            requested_by=(requested_by or "api")[:128],
        )  # fmt: skip


def _find(services: SpanForgetPorts, user_id: str, target: SpanTarget) -> erase.SpanRows:
    """The span's windows and the summaries made from them."""
    with services.db.unit_of_work(user_id) as session:
        return erase.find_span_rows(session, user_id, session_id=target.session_id, start=target.start, end=target.end)


def _indices_by_session(found: erase.SpanRows) -> dict[str, set[int]]:
    by_session: dict[str, set[int]] = {}
    for _, sid, index in found.windows:
        by_session.setdefault(sid, set()).add(index)
    return by_session


def _span_indices(services: SpanForgetPorts, user_id: str, session_id: str, target: SpanTarget) -> set[int]:
    """The windows of `session_id` (the user's, per the catalog) with objects in the store that overlap the
    span: uploaded, maybe not ingested yet."""
    info = services.sessions.get(session_id)
    if info is None or info.user_id != user_id or info.created_at is None or target.start is None:
        return set()
    assert target.end is not None
    present = {int(m.group(1)) for key in services.store.list(f"sessions/{session_id}/") if (m := _WINDOW.match(key))}
    seconds = services.timeline_settings.window_seconds
    spans = {i: window_span(info.created_at, i, seconds) for i in present}
    return {i for i, (start, end) in spans.items() if start < target.end and end > target.start}


def _erase_objects(
    services: SpanForgetPorts, user_id: str, target: SpanTarget, found: erase.SpanRows, report: SpanReport
) -> dict[str, set[int]]:
    """Erase the target's objects; the windows of the span per session (ingested or only uploaded)."""
    store = services.store
    if target.session_id is not None:
        # Everything of the session but its catalog entry (locally the session's metadata.json, which holds
        # no content and keeps answering ownership checks); S3: every version.
        root = f"sessions/{target.session_id}/"
        catalog = f"{root}metadata.json"
        entry = store.get(catalog) if catalog in store.list(root) else None
        erased = store.delete_prefix(root)
        if entry is not None:
            services.store.put(catalog, entry)
            erased -= 1
        report.add("objects", erased)
        return {}
    by_session = _indices_by_session(found)
    for sid in by_session:
        by_session[sid] |= _span_indices(services, user_id, sid, target)
    prefixes = {f"sessions/{sid}/window_{i}/" for sid, indices in by_session.items() for i in indices}
    for prefix in sorted(prefixes):
        if re.fullmatch(SESSION_ID_PATTERN, prefix.split("/")[1]):
            report.add("objects", store.delete_prefix(prefix))
    return by_session


def _erase_postgres(
    services: SpanForgetPorts, user_id: str, target: SpanTarget, found: erase.SpanRows, report: SpanReport
) -> None:
    """Step 3: the span's rows in PostgreSQL, in one transaction under the user's forget lock."""
    window_ids = [w for w, _, _ in found.windows]
    ids = window_ids + found.summaries
    with services.db.unit_of_work(user_id) as session:
        lock_forgetting(session, user_id)
        # The voices a recording named go with any part of it: a voice is heard over the whole recording.
        report.add(
            "postgres.voices",
            erase.delete_span_voices(
                session, user_id, session_id=target.session_id, start=target.start, end=target.end
            ),
        )
        # App events of the span's windows (their ids and counts), and of a forgotten session all of them.
        report.add(
            "postgres.events",
            erase.delete_span_events(session, user_id, session_id=target.session_id, window_ids=window_ids),
        )
        if not ids:
            return
        _erase_segments(session, user_id, window_ids, found.summaries, report)


def _erase_segments(
    session: Session, user_id: str, window_ids: list[uuid.UUID], summary_ids: list[uuid.UUID], report: SpanReport
) -> None:
    """The span's segments and what hangs off them; summaries left with windows are emptied, to be re-made."""
    ids = window_ids + summary_ids
    report.add("postgres.memory_history", erase.delete_memory_history(session, user_id, ids))
    report.add("postgres.semantic_restored", erase.restore_invalidated_triples(session, user_id, ids))
    entities = erase.delete_segment_triples(session, user_id, ids)
    report.add("postgres.triples", len(entities))
    report.add("postgres.visual_embeddings", erase.delete_visual_embeddings(session, user_id, window_ids))
    report.add("postgres.windows", erase.delete_windows(session, user_id, window_ids))
    # A summary with no window left under it goes; one with windows left is emptied, to be re-made.
    report.add("postgres.summaries", erase.delete_emptied_summaries(session, user_id, summary_ids))
    report.add(
        "postgres.summaries_invalidated", erase.invalidate_summaries(session, user_id, summary_ids, FORGOTTEN_SUMMARY)
    )
    candidates = {e for pair in entities for e in pair if e is not None}
    report.add("postgres.entities", delete_unreferenced_entities(session, user_id, candidates))


def _finish_tombstone(services: SpanForgetPorts, user_id: str, audit_id: int, report: SpanReport) -> None:
    """Step 4's end: the tombstone marked complete with the counts deleted."""
    import json

    with services.db.unit_of_work(user_id) as session:
        erase.finish_span_tombstone(
            session, user_id, audit_id, finished_at=datetime.now(UTC),
            deleted_json=json.dumps(dict(sorted(report.deleted.items()))),
        )  # fmt: skip


def forget_memories(
    services: SpanForgetPorts, user_id: str, query: ForgetSpanQuery, *, requested_by: str = "api"
) -> ForgetSpanResult:
    """DELETE /memories: erase the caller's span [from, to)."""
    report = forget_span(services, user_id, SpanTarget(query.start, query.end), requested_by=requested_by)
    return ForgetSpanResult(start=iso_timestamp(query.start), end=iso_timestamp(query.end), deleted=report.deleted)


def forget_session(
    services: SpanForgetPorts, user_id: str, session_id: str, *, requested_by: str = "api"
) -> ForgetSpanResult:
    """DELETE /sessions/{id}: erase one of the caller's sessions; Forbidden for anyone else's."""
    report = forget_span(services, user_id, SpanTarget(session_id=session_id), requested_by=requested_by)
    return ForgetSpanResult(session_id=session_id, deleted=report.deleted)
