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
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from sqlalchemy import text

from worldmm.chat.models import iso_timestamp
from worldmm.crashpoints import crash_point
from worldmm.db.tombstones import lock_forgetting
from worldmm.errors import BadRequest, Forbidden
from worldmm.forget import ForgetPorts, tally
from worldmm.ingest.events import SESSION_ID_PATTERN
from worldmm.ingest.sessions.port import window_span
from worldmm.memories.models import ForgetSpanQuery, ForgetSpanResult
from worldmm.memory.entities import delete_unreferenced_entities
from worldmm.scale import SCALES, Scale

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

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


@dataclass(frozen=True)
class _Windows:
    """The span's 30 s windows (id, session, index) and summaries (id) found in PostgreSQL."""

    windows: list[tuple[uuid.UUID, str, int]]
    summaries: list[uuid.UUID]


def forget_span(services: ForgetPorts, user_id: str, target: SpanTarget, *, requested_by: str = "api") -> SpanReport:
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


def check_session_owner(services: ForgetPorts, user_id: str, session_id: str) -> None:
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
        known = session.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM worldmm_segments WHERE user_id = :u AND session_id = :s) "
                "OR EXISTS (SELECT 1 FROM worldmm_forgotten_spans WHERE user_id = :u AND session_id = :s)"
            ),
            {"u": user_id, "s": session_id},
        ).scalar()
    if not known:
        raise Forbidden(SESSION_NOT_YOURS)


# --- steps -----------------------------------------------------------------------------------------------


def _write_tombstone(services: ForgetPorts, user_id: str, target: SpanTarget, requested_by: str) -> int:
    with services.db.unit_of_work(user_id) as session:
        lock_forgetting(session, user_id)  # waits for claims in flight; later ones see the tombstone
        return int(
            session.execute(
                text(
                    "INSERT INTO worldmm_forgotten_spans (user_id, session_id, span_start, span_end, requested_by) "
                    "VALUES (:u, :s, :start, :end, :by) RETURNING id"
                ),
                {
                    "u": user_id,
                    "s": target.session_id,
                    "start": target.start,
                    "end": target.end,
                    "by": (requested_by or "api")[:128],
                },
            ).scalar_one()
        )


def _target_sql(target: SpanTarget, alias: str = "s") -> str:
    if target.session_id is not None:
        return f"{alias}.session_id = :sid"
    # A segment lasts at most an hour: the lower bound on start_time lets ix_segments_user_time range it.
    return f"{alias}.start_time < :end AND {alias}.end_time > :start AND {alias}.start_time > :earliest"


def _params(user_id: str, target: SpanTarget) -> dict[str, Any]:
    params: dict[str, Any] = {
        "u": user_id, "sid": target.session_id, "start": target.start, "end": target.end, "window": int(Scale.WINDOW)
    }
    if target.start is not None:
        floor = datetime.min.replace(tzinfo=UTC)
        longest = timedelta(seconds=max(SCALES))
        params["earliest"] = target.start - longest if target.start > floor + longest else floor
    return params


def _find(services: ForgetPorts, user_id: str, target: SpanTarget) -> _Windows:
    where, params = _target_sql(target), _params(user_id, target)
    with services.db.unit_of_work(user_id) as session:
        windows = session.execute(
            text(
                f"SELECT s.id, s.session_id, s.window_index FROM worldmm_segments s "
                f"WHERE s.user_id = :u AND s.duration_seconds = :window AND {where}"
            ),
            params,
        ).all()
        # A summary is made from the windows under it: it is touched when a window of the target lies under it
        # (a summary re-made after an earlier erase of the same span is not), or for a session, always.
        under = (
            ""
            if target.session_id is not None
            else "AND EXISTS (SELECT 1 FROM worldmm_segments w WHERE w.user_id = :u AND w.duration_seconds = :window "
            f"AND w.session_id = s.session_id AND w.start_time >= s.start_time AND w.start_time < s.end_time "
            f"AND {_target_sql(target, 'w')})"
        )
        summaries = session.execute(
            text(
                "SELECT s.id FROM worldmm_segments s "
                f"WHERE s.user_id = :u AND s.duration_seconds > :window AND {where} {under}"
            ),
            params,
        ).scalars()
        return _Windows([(r[0], r[1], r[2]) for r in windows], list(summaries))


def _indices_by_session(found: _Windows) -> dict[str, set[int]]:
    by_session: dict[str, set[int]] = {}
    for _, sid, index in found.windows:
        by_session.setdefault(sid, set()).add(index)
    return by_session


def _span_indices(services: ForgetPorts, user_id: str, session_id: str, target: SpanTarget) -> set[int]:
    """The windows of `session_id` (the user's, per the catalog) with objects in the store that overlap the
    span: uploaded, maybe not ingested yet."""
    info = services.sessions.get(session_id)
    if info is None or info.user_id != user_id or info.created_at is None or target.start is None:
        return set()
    assert target.end is not None
    present = {int(m.group(1)) for key in services.store.list(f"sessions/{session_id}/") if (m := _WINDOW.match(key))}
    seconds = services.settings.window_seconds
    spans = {i: window_span(info.created_at, i, seconds) for i in present}
    return {i for i, (start, end) in spans.items() if start < target.end and end > target.start}


def _erase_objects(
    services: ForgetPorts, user_id: str, target: SpanTarget, found: _Windows, report: SpanReport
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
    services: ForgetPorts, user_id: str, target: SpanTarget, found: _Windows, report: SpanReport
) -> None:
    window_ids = [w for w, _, _ in found.windows]
    ids = window_ids + found.summaries
    with services.db.unit_of_work(user_id) as session:
        lock_forgetting(session, user_id)
        params = {"u": user_id, "ids": ids, "wids": window_ids, "sids": found.summaries, "window": int(Scale.WINDOW)}
        run = _runner(session, report, params)
        # The voices a recording named go with any part of it: a voice is heard over the whole recording.
        run(
            "postgres.voices",
            "DELETE FROM worldmm_voices WHERE user_id = :u AND "
            + ("session_id = :sid" if target.session_id else "recorded_from < :end AND recorded_to > :start"),
            sid=target.session_id,
            start=target.start,
            end=target.end,
        )
        # App events of the span's windows (their ids and counts), and of a forgotten session all of them.
        run(
            "postgres.events",
            "DELETE FROM worldmm_event_outbox WHERE user_id = :u AND "
            + ("session_id = :sid" if target.session_id else "detail->>'segmentId' = ANY(:wid_texts)"),
            sid=target.session_id,
            wid_texts=[str(w) for w in window_ids],
        )
        if not ids:
            return
        run(
            "postgres.memory_history",
            "DELETE FROM worldmm_memory_history WHERE user_id = :u AND (segment_id = ANY(:ids) OR triple_id IN "
            "(SELECT id FROM worldmm_triples WHERE user_id = :u AND segment_id = ANY(:ids)))",
        )
        run(
            "postgres.semantic_restored",
            "UPDATE worldmm_triples SET invalidated_at = NULL, invalidated_by_segment_id = NULL "
            "WHERE user_id = :u AND invalidated_by_segment_id = ANY(:ids) AND NOT (segment_id = ANY(:ids))",
        )
        entities = session.execute(
            text(
                "DELETE FROM worldmm_triples WHERE user_id = :u AND segment_id = ANY(:ids) "
                "RETURNING subject_entity_id, object_entity_id"
            ),
            {"u": user_id, "ids": ids},
        ).all()
        report.add("postgres.triples", len(entities))
        run(
            "postgres.visual_embeddings",
            "DELETE FROM worldmm_visual_embeddings WHERE user_id = :u AND segment_id = ANY(:wids)",
        )
        run("postgres.windows", "DELETE FROM worldmm_segments WHERE user_id = :u AND id = ANY(:wids)")
        # A summary with no window left under it goes; one with windows left is emptied, to be re-made.
        run(
            "postgres.summaries",
            "DELETE FROM worldmm_segments s WHERE s.user_id = :u AND s.id = ANY(:sids) AND NOT EXISTS ("
            "SELECT 1 FROM worldmm_segments w WHERE w.user_id = :u AND w.session_id = s.session_id "
            "AND w.duration_seconds = :window AND w.start_time >= s.start_time AND w.start_time < s.end_time)",
        )
        run(
            "postgres.summaries_invalidated",
            "UPDATE worldmm_segments SET processing_status = 'failed', caption = NULL, transcript = NULL, "
            "caption_source = NULL, caption_embedding = NULL, source_fingerprint = NULL, enriched = false, "
            "claim_token = NULL, claimed_at = NULL, claim_owner = NULL, error = :why, updated_at = now() "
            "WHERE user_id = :u AND id = ANY(:sids)",
            why=FORGOTTEN_SUMMARY,
        )
        candidates = {e for pair in entities for e in pair if e is not None}
        report.add("postgres.entities", delete_unreferenced_entities(session, user_id, candidates))


def _runner(session: Session, report: SpanReport, params: dict[str, Any]) -> Any:
    def run(store: str, sql: str, **extra: Any) -> None:
        result = session.execute(text(sql), params | extra)
        report.add(store, int(getattr(result, "rowcount", 0) or 0))

    return run


def _finish_tombstone(services: ForgetPorts, user_id: str, audit_id: int, report: SpanReport) -> None:
    import json

    with services.db.unit_of_work(user_id) as session:
        session.execute(
            text(
                "UPDATE worldmm_forgotten_spans SET finished_at = :now, complete = true, "
                "deleted = CAST(:deleted AS jsonb) WHERE user_id = :u AND id = :id"
            ),
            {
                "now": datetime.now(UTC),
                "deleted": json.dumps(dict(sorted(report.deleted.items()))),
                "u": user_id,
                "id": audit_id,
            },
        )


def forget_memories(
    services: ForgetPorts, user_id: str, query: ForgetSpanQuery, *, requested_by: str = "api"
) -> ForgetSpanResult:
    """DELETE /memories: erase the caller's span [from, to)."""
    report = forget_span(services, user_id, SpanTarget(query.start, query.end), requested_by=requested_by)
    return ForgetSpanResult(start=iso_timestamp(query.start), end=iso_timestamp(query.end), deleted=report.deleted)


def forget_session(
    services: ForgetPorts, user_id: str, session_id: str, *, requested_by: str = "api"
) -> ForgetSpanResult:
    """DELETE /sessions/{id}: erase one of the caller's sessions; Forbidden for anyone else's."""
    report = forget_span(services, user_id, SpanTarget(session_id=session_id), requested_by=requested_by)
    return ForgetSpanResult(session_id=session_id, deleted=report.deleted)
