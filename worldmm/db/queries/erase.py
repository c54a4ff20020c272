"""Forget-a-span's queries: whose session it is, the tombstone, the span's rows found and erased.

Every statement names `user_id` as well as running under row-level security. A span is either one session
(`session_id`) or a time range [start, end) of every session.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from worldmm.scale import SCALES, Scale

_SESSION_KNOWN_SQL = (
    "SELECT EXISTS (SELECT 1 FROM worldmm_segments WHERE user_id = :u AND session_id = :s) "
    "OR EXISTS (SELECT 1 FROM worldmm_forgotten_spans WHERE user_id = :u AND session_id = :s)"
)
_TOMBSTONE_SQL = (
    "INSERT INTO worldmm_forgotten_spans (user_id, session_id, span_start, span_end, requested_by) "
    "VALUES (:u, :s, :start, :end, :by) RETURNING id"
)
_FINISH_TOMBSTONE_SQL = (
    "UPDATE worldmm_forgotten_spans SET finished_at = :now, complete = true, "
    "deleted = CAST(:deleted AS jsonb) WHERE user_id = :u AND id = :id"
)
_MEMORY_HISTORY_SQL = (
    "DELETE FROM worldmm_memory_history WHERE user_id = :u AND (segment_id = ANY(:ids) OR triple_id IN "
    "(SELECT id FROM worldmm_triples WHERE user_id = :u AND segment_id = ANY(:ids)))"
)
_RESTORE_SEMANTIC_SQL = (
    "UPDATE worldmm_triples SET invalidated_at = NULL, invalidated_by_segment_id = NULL "
    "WHERE user_id = :u AND invalidated_by_segment_id = ANY(:ids) AND NOT (segment_id = ANY(:ids))"
)
_TRIPLES_SQL = (
    "DELETE FROM worldmm_triples WHERE user_id = :u AND segment_id = ANY(:ids) "
    "RETURNING subject_entity_id, object_entity_id"
)
_VISUAL_SQL = "DELETE FROM worldmm_visual_embeddings WHERE user_id = :u AND segment_id = ANY(:wids)"
_WINDOWS_SQL = "DELETE FROM worldmm_segments WHERE user_id = :u AND id = ANY(:wids)"
_EMPTIED_SUMMARIES_SQL = (
    "DELETE FROM worldmm_segments s WHERE s.user_id = :u AND s.id = ANY(:sids) AND NOT EXISTS ("
    "SELECT 1 FROM worldmm_segments w WHERE w.user_id = :u AND w.session_id = s.session_id "
    "AND w.duration_seconds = :window AND w.start_time >= s.start_time AND w.start_time < s.end_time)"
)
_INVALIDATE_SUMMARIES_SQL = (
    "UPDATE worldmm_segments SET processing_status = 'failed', caption = NULL, transcript = NULL, "
    "caption_source = NULL, caption_embedding = NULL, source_fingerprint = NULL, enriched = false, "
    "claim_token = NULL, claimed_at = NULL, claim_owner = NULL, error = :why, updated_at = now() "
    "WHERE user_id = :u AND id = ANY(:sids)"
)


@dataclass(frozen=True)
class SpanRows:
    """The span's 30 s windows (id, session, index) and summaries (id) found in PostgreSQL."""

    windows: list[tuple[uuid.UUID, str, int]]
    summaries: list[uuid.UUID]


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


def session_known(session: Session, user_id: str, session_id: str) -> bool:
    """Whether the user has memories of `session_id` or erased it before."""
    return bool(session.execute(text(_SESSION_KNOWN_SQL), {"u": user_id, "s": session_id}).scalar())


def insert_span_tombstone(
    session: Session,
    user_id: str,
    *,
    session_id: str | None,
    start: datetime | None,
    end: datetime | None,
    requested_by: str,
) -> int:
    """Write the span's tombstone (also its audit row); its id."""
    params = {"u": user_id, "s": session_id, "start": start, "end": end, "by": requested_by}
    return int(session.execute(text(_TOMBSTONE_SQL), params).scalar_one())


def finish_span_tombstone(
    session: Session, user_id: str, tombstone_id: int, *, finished_at: datetime, deleted_json: str
) -> None:
    """Mark the tombstone complete with the counts deleted (a JSON object)."""
    session.execute(
        text(_FINISH_TOMBSTONE_SQL), {"now": finished_at, "deleted": deleted_json, "u": user_id, "id": tombstone_id}
    )


def _target_sql(session_id: str | None, alias: str = "s") -> str:
    if session_id is not None:
        return f"{alias}.session_id = :sid"
    # A segment lasts at most an hour: the lower bound on start_time lets ix_segments_user_time range it.
    return f"{alias}.start_time < :end AND {alias}.end_time > :start AND {alias}.start_time > :earliest"


def _span_params(user_id: str, session_id: str | None, start: datetime | None, end: datetime | None) -> dict[str, Any]:
    params: dict[str, Any] = {"u": user_id, "sid": session_id, "start": start, "end": end, "window": int(Scale.WINDOW)}
    if start is not None:
        floor = datetime.min.replace(tzinfo=UTC)
        longest = timedelta(seconds=max(SCALES))
        params["earliest"] = start - longest if start > floor + longest else floor
    return params


def find_span_rows(
    session: Session, user_id: str, *, session_id: str | None, start: datetime | None, end: datetime | None
) -> SpanRows:
    """The windows of the span and the summaries made from them (for a session: all of its summaries)."""
    where, params = _target_sql(session_id), _span_params(user_id, session_id, start, end)
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
        if session_id is not None
        else "AND EXISTS (SELECT 1 FROM worldmm_segments w WHERE w.user_id = :u AND w.duration_seconds = :window "
        f"AND w.session_id = s.session_id AND w.start_time >= s.start_time AND w.start_time < s.end_time "
        f"AND {_target_sql(session_id, 'w')})"
    )
    summaries = session.execute(
        text(
            "SELECT s.id FROM worldmm_segments s "
            f"WHERE s.user_id = :u AND s.duration_seconds > :window AND {where} {under}"
        ),
        params,
    ).scalars()
    return SpanRows([(r[0], r[1], r[2]) for r in windows], list(summaries))


def delete_span_voices(
    session: Session, user_id: str, *, session_id: str | None, start: datetime | None, end: datetime | None
) -> int:
    """Delete the voices a recording of the session (or overlapping the range) named; how many."""
    where = "session_id = :sid" if session_id else "recorded_from < :end AND recorded_to > :start"
    result = session.execute(
        text("DELETE FROM worldmm_voices WHERE user_id = :u AND " + where),
        {"u": user_id, "sid": session_id, "start": start, "end": end},
    )
    return _rowcount(result)


def delete_span_events(session: Session, user_id: str, *, session_id: str | None, window_ids: list[uuid.UUID]) -> int:
    """Delete the app events (outbox) of the session, or of the given windows; how many."""
    where = "session_id = :sid" if session_id else "detail->>'segmentId' = ANY(:wid_texts)"
    result = session.execute(
        text("DELETE FROM worldmm_event_outbox WHERE user_id = :u AND " + where),
        {"u": user_id, "sid": session_id, "wid_texts": [str(w) for w in window_ids]},
    )
    return _rowcount(result)


def delete_memory_history(session: Session, user_id: str, segment_ids: list[uuid.UUID]) -> int:
    """Delete the consolidation history of the segments and of their triples; how many rows."""
    return _rowcount(session.execute(text(_MEMORY_HISTORY_SQL), {"u": user_id, "ids": segment_ids}))


def restore_invalidated_triples(session: Session, user_id: str, segment_ids: list[uuid.UUID]) -> int:
    """Make valid again the triples (of other segments) that these segments had invalidated; how many."""
    return _rowcount(session.execute(text(_RESTORE_SEMANTIC_SQL), {"u": user_id, "ids": segment_ids}))


def delete_segment_triples(
    session: Session, user_id: str, segment_ids: list[uuid.UUID]
) -> list[tuple[uuid.UUID | None, uuid.UUID | None]]:
    """Delete the segments' triples; the (subject, object) entity ids of each triple deleted."""
    rows = session.execute(text(_TRIPLES_SQL), {"u": user_id, "ids": segment_ids}).all()
    return [(r[0], r[1]) for r in rows]


def delete_visual_embeddings(session: Session, user_id: str, window_ids: list[uuid.UUID]) -> int:
    """Delete the windows' visual embeddings; how many."""
    return _rowcount(session.execute(text(_VISUAL_SQL), {"u": user_id, "wids": window_ids}))


def delete_windows(session: Session, user_id: str, window_ids: list[uuid.UUID]) -> int:
    """Delete the window segments; how many."""
    return _rowcount(session.execute(text(_WINDOWS_SQL), {"u": user_id, "wids": window_ids}))


def delete_emptied_summaries(session: Session, user_id: str, summary_ids: list[uuid.UUID]) -> int:
    """Delete those of the summaries with no 30 s window left under them; how many."""
    params = {"u": user_id, "sids": summary_ids, "window": int(Scale.WINDOW)}
    return _rowcount(session.execute(text(_EMPTIED_SUMMARIES_SQL), params))


def invalidate_summaries(session: Session, user_id: str, summary_ids: list[uuid.UUID], why: str) -> int:
    """Empty the (remaining) summaries and mark them `failed` with `why`, to be made again; how many."""
    return _rowcount(session.execute(text(_INVALIDATE_SUMMARIES_SQL), {"u": user_id, "sids": summary_ids, "why": why}))
