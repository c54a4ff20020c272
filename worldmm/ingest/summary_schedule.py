"""Live multiscale scheduling: a summary is merged exactly once, when its last child completes.

Windows arrive out of order, concurrently, fail and are retried, and can be re-enriched (retrigger
force). The rules that make summaries come out right anyway:

* **Readiness.** Live, a summary is produced when every child it is made of exists and is complete
  (`children_of`). At session end (`on_session_end`) a window still open is closed with the complete
  children it has, if it has at least `PARTIAL_MIN_CHILDREN` of them: an 11 minute session yields
  three 3 min summaries and a partial fourth (its two windows), one 10 min summary, and no 1 h summary
  (its only child would be the 10 min one). A partial summary is re-produced when a late child lands.
* **Exactly once.** The check-and-claim runs in one short transaction under a transaction-scoped
  advisory lock on (user, session, scale, index), backed by the segments' unique key. The claimed row
  is `pending` and carries the fingerprint (`source_fingerprint`) of the children it is made from; a
  second caller that finds it pending leaves it to its producer.
* **Staleness.** When a child's caption changes (re-enrichment), the fingerprint no longer matches and
  the summary is re-produced; its old episodic triples are replaced. A producer re-checks the
  fingerprint when it finishes and goes round again if a child changed meanwhile.
* **No model call inside a transaction.** claim → commit → merge (LLM) → write caption → extract
  triples (their own short transactions) → mark complete; then the parent scale is checked.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from sqlalchemy import delete, func, select, tuple_
from sqlalchemy.orm import Session

from worldmm.crashpoints import crash_point
from worldmm.db.models import MemoryType, ProcessingStatus, Segment, Triple
from worldmm.db.queries.summaries import lock_summary_slot
from worldmm.errors import ModelOutputError
from worldmm.ingest.claim_owner import owner_for, owner_gone
from worldmm.llm.usage import UsageLog
from worldmm.memory.episodic.summarizer import caption_source_of
from worldmm.memory.episodic.summary_tree import (
    PARTIAL_MIN_CHILDREN,
    ChildCaption,
    SlotKey,
    children_of,
    fingerprint,
    parent_of,
)
from worldmm.scale import SUMMARY_SCALES, Scale

if TYPE_CHECKING:
    from worldmm.db.engine import Database
    from worldmm.ingest.port import MultiscalePorts

logger = Logger(child=True)


@dataclass(frozen=True)
class _Claim:
    """The right to produce one summary from one set of children (identified by its fingerprint)."""

    segment_id: uuid.UUID
    key: SlotKey
    fingerprint: str
    children: tuple[ChildCaption, ...]
    final: bool


@dataclass(frozen=True)
class SummaryOutcome:
    """What closing one summary did."""

    key: SlotKey
    segment_id: uuid.UUID | None
    produced: bool
    error: str | None = None


def complete_summaries(db: Database, user_id: str, session_id: str) -> int:
    """How many of the session's summaries (every scale above the window) are complete."""
    with db.unit_of_work(user_id) as session:
        count = session.scalar(
            select(func.count()).where(
                Segment.user_id == user_id,
                Segment.session_id == session_id,
                Segment.duration_seconds > Scale.WINDOW,
                Segment.processing_status == ProcessingStatus.COMPLETE,
            )
        )
        return int(count or 0)


def on_window_complete(services: MultiscalePorts, user_id: str, session_id: str, window_index: int) -> None:
    """Called after a 30 s window's segment is complete: close every summary it was the last child of."""
    close_upwards(services, user_id, session_id, SlotKey(Scale.WINDOW, window_index))


def on_session_end(
    services: MultiscalePorts, user_id: str, session_id: str, *, concurrency: int = 1
) -> list[SummaryOutcome]:
    """Close the session's partial windows, scale by scale (3 min, then 10 min, then 1 h).

    Summaries already produced with the same children are left alone, so calling this twice is safe.
    """
    outcomes: list[SummaryOutcome] = []
    for scale in SUMMARY_SCALES:
        keys = _open_parents(services, user_id, session_id, scale)
        outcomes.extend(
            _map(
                lambda key: produce_summary(services, user_id, session_id, key, final=True),
                keys,
                concurrency,
            )
        )
    return outcomes


def close_upwards(services: MultiscalePorts, user_id: str, session_id: str, child: SlotKey) -> None:
    """Produce `child`'s parent if it is now ready, then its parent, and so on up to 1 h."""
    parent = parent_of(child)
    if parent is not None and _may_be_due(services, user_id, session_id, parent):
        produce_summary(services, user_id, session_id, parent, final=False)


def produce_summary(
    services: MultiscalePorts, user_id: str, session_id: str, key: SlotKey, *, final: bool = False
) -> SummaryOutcome:
    """Merge, store and extract the summary `key` if it is ready and not already current.

    `final` closes a partial window (session end). On a model answer that cannot be parsed the summary
    is marked failed (a later trigger retries it); other errors mark it failed and propagate so the
    caller's retry policy applies.
    """
    claim = _claim(services, user_id, session_id, key, final=final)
    if claim is None:
        if _is_complete(services, user_id, session_id, key):
            # Resume: a function killed after completing this summary may not have closed its parent.
            close_upwards(services, user_id, session_id, key)
        return SummaryOutcome(key, None, produced=False)
    produced, segment_id = False, claim.segment_id
    while claim is not None:
        try:
            usage = UsageLog()
            summary, model = services.summarizer.summarize(key.duration_seconds, claim.children, usage)
            embedding = services.embedder.embed([summary])[0]
        except ModelOutputError as exc:
            _mark_failed(services, user_id, session_id, claim, str(exc))
            logger.warning("summary_merge_unparsable", extra={"scale": key.duration_seconds, "error": str(exc)})
            return SummaryOutcome(key, claim.segment_id, produced=False, error=str(exc))
        except Exception as exc:
            _mark_failed(services, user_id, session_id, claim, f"{type(exc).__name__}: {exc}")
            raise
        crash_point("summary.merged")
        if not _write_caption(services, user_id, session_id, claim, summary, embedding, usage, model):
            return SummaryOutcome(key, claim.segment_id, produced=produced)
        crash_point("summary.caption_written")
        logger.info(
            "summary_merged",
            extra={
                "segment_id": str(claim.segment_id),
                "scale": key.duration_seconds,
                "window_index": key.window_index,
                "children": len(claim.children),
                "model": model,
            },
        )
        try:
            _extract(services, user_id, claim, summary)
        except Exception as exc:
            _mark_failed(services, user_id, session_id, claim, f"{type(exc).__name__}: {exc}")
            raise
        crash_point("summary.extracted")
        produced = True
        claim = _finish(services, user_id, session_id, claim)
        crash_point("summary.finished")
    close_upwards(services, user_id, session_id, key)
    return SummaryOutcome(key, segment_id, produced=produced)  # the slot's row keeps its id once created


# --- transactions ------------------------------------------------------------------------------


def _may_be_due(services: MultiscalePorts, user_id: str, session_id: str, key: SlotKey) -> bool:
    """False when the live check of `key` is certain to do nothing: no row for it yet and not every child
    complete. One small read without the slot lock: most windows are not the last child of their slot.

    Equivalent to `_claim(final=False)` returning None with no row to resume from; a row or a full set
    of complete children takes the locked path.
    """
    wanted = [(c.duration_seconds, c.window_index) for c in children_of(key)]
    with services.db.unit_of_work(user_id) as session:
        rows = session.execute(
            select(Segment.duration_seconds, Segment.window_index, Segment.processing_status).where(
                Segment.user_id == user_id,
                Segment.session_id == session_id,
                tuple_(Segment.duration_seconds, Segment.window_index).in_(
                    [*wanted, (key.duration_seconds, key.window_index)]
                ),
            )
        ).all()
    if any((d, i) == (key.duration_seconds, key.window_index) for d, i, _ in rows):
        return True
    return sum(status == ProcessingStatus.COMPLETE for *_, status in rows) == len(wanted)


def _lock(session: Session, user_id: str, session_id: str, key: SlotKey) -> None:
    """Serialise work on one summary slot for the rest of the transaction."""
    lock_summary_slot(session, user_id, session_id, key.duration_seconds, key.window_index)


def _slot(session: Session, user_id: str, session_id: str, key: SlotKey) -> Segment | None:
    return session.scalars(
        select(Segment).where(
            Segment.user_id == user_id,
            Segment.session_id == session_id,
            Segment.duration_seconds == key.duration_seconds,
            Segment.window_index == key.window_index,
        )
    ).one_or_none()


def _children(session: Session, user_id: str, session_id: str, key: SlotKey) -> list[Segment]:
    wanted = [(c.duration_seconds, c.window_index) for c in children_of(key)]
    return list(
        session.scalars(
            select(Segment)
            .where(
                Segment.user_id == user_id,
                Segment.session_id == session_id,
                tuple_(Segment.duration_seconds, Segment.window_index).in_(wanted),
            )
            .order_by(Segment.start_time, Segment.id)
        )
    )


def _ready_children(rows: list[Segment], key: SlotKey, *, final: bool, exists: bool) -> list[Segment] | None:
    """The captioned children to merge now, or None when the summary is not ready.

    A complete child without a caption (an audio-only window left unenriched) counts as done but has
    nothing to contribute to the merge.
    """
    done = [r for r in rows if r.processing_status == ProcessingStatus.COMPLETE]
    captioned = [r for r in done if (r.caption or "").strip()]
    if not captioned:
        return None
    if final:
        return captioned if len(captioned) >= PARTIAL_MIN_CHILDREN or exists else None
    if len(done) != len(rows):
        return None  # a child is still pending or failed: its completion will trigger us again
    if len(rows) == len(children_of(key)) or exists:
        return captioned
    return None


def _as_captions(rows: Iterable[Segment]) -> tuple[ChildCaption, ...]:
    return tuple(
        ChildCaption(
            str(r.id),
            r.duration_seconds,
            r.start_time,
            r.end_time,
            (r.caption or "").strip(),
            (r.transcript or "").strip(),
        )
        for r in rows
    )


def _stale_pending(row: Segment, services: MultiscalePorts) -> bool:
    """A pending summary whose producer died: a local process that is gone, or nobody has touched it for
    the reaper interval."""
    if owner_gone(row.claim_owner):
        return True
    limit = timedelta(seconds=services.ingest_settings.reaper_pending_after_s)
    return row.updated_at is not None and datetime.now(UTC) - row.updated_at > limit


def _claim(services: MultiscalePorts, user_id: str, session_id: str, key: SlotKey, *, final: bool) -> _Claim | None:
    with services.db.unit_of_work(user_id) as session:
        _lock(session, user_id, session_id, key)
        row = _slot(session, user_id, session_id, key)
        ready = _ready_children(_children(session, user_id, session_id, key), key, final=final, exists=row is not None)
        if ready is None:
            return None
        children = _as_captions(ready)
        fp = fingerprint(children)
        if row is not None:
            if row.processing_status == ProcessingStatus.COMPLETE and row.source_fingerprint == fp:
                return None
            if row.processing_status == ProcessingStatus.PENDING and not _stale_pending(row, services):
                return None  # its producer re-checks the children when it finishes
        else:
            row = Segment(
                user_id=user_id,
                session_id=session_id,
                source_session_id=session_id,
                window_index=key.window_index,
                duration_seconds=key.duration_seconds,
                start_time=ready[0].start_time,
                end_time=ready[-1].end_time,
            )
            session.add(row)
        _stamp(row, ready, fp, owner_for(services.ingest_settings))
        session.flush()
        for child in ready:
            child.parent_segment_id = row.id
        logger.info(
            "summary_claimed",
            extra={
                "segment_id": str(row.id),
                "scale": key.duration_seconds,
                "window_index": key.window_index,
            },
        )
        claimed = _Claim(row.id, key, fp, children, final)
    crash_point("summary.claimed")
    return claimed


def _stamp(row: Segment, ready: list[Segment], fp: str, owner: str | None) -> None:
    row.processing_status = ProcessingStatus.PENDING
    row.claim_owner = owner  # local profile: the producing process (taken over at once when it is gone)
    row.source_fingerprint = fp
    row.start_time = min(r.start_time for r in ready)
    row.end_time = max(r.end_time for r in ready)
    row.error = None
    row.updated_at = datetime.now(UTC)


def _owned(session: Session, user_id: str, session_id: str, claim: _Claim) -> Segment | None:
    """The summary row if `claim` still owns it (same fingerprint, still pending)."""
    _lock(session, user_id, session_id, claim.key)
    row = _slot(session, user_id, session_id, claim.key)
    if row is None or row.source_fingerprint != claim.fingerprint or row.processing_status != ProcessingStatus.PENDING:
        return None
    return row


def _write_caption(
    services: MultiscalePorts,
    user_id: str,
    session_id: str,
    claim: _Claim,
    summary: str,
    embedding: list[float],
    usage: UsageLog,
    model: str,
) -> bool:
    """Store the merged caption, where it came from (`caption_source`: written by a model, or extractive) and
    the merge call's usage row, and drop the previous production's episodic triples. A superseded production's
    call is still billed: its usage row is written without a segment."""
    with services.db.unit_of_work(user_id) as session:
        row = _owned(session, user_id, session_id, claim)
        if row is None:
            usage.flush(session, user_id, None)
            logger.info("summary_superseded", extra={"segment_id": str(claim.segment_id)})
            return False
        usage.flush(session, user_id, row.id)
        row.caption = summary
        row.caption_source = caption_source_of(model)
        row.caption_embedding = embedding
        row.updated_at = datetime.now(UTC)
        session.execute(
            delete(Triple).where(
                Triple.user_id == user_id,
                Triple.segment_id == row.id,
                Triple.memory_type == MemoryType.EPISODIC,
            )
        )
        return True


def _extract(services: MultiscalePorts, user_id: str, claim: _Claim, summary: str) -> None:
    """Episodic triples from every summary; semantic triples and consolidation from 10 min ones."""
    from worldmm.ingest.enrichment import extract_and_store_episodic

    entities, triples = extract_and_store_episodic(services, user_id, claim.segment_id, summary)
    logger.info(
        "summary_triples_extracted",
        extra={"segment_id": str(claim.segment_id), "entity_count": entities, "triple_count": triples},
    )
    if claim.key.duration_seconds == Scale.TEN_MIN:
        from worldmm.memory.semantic.consolidation import consolidate_summary

        consolidate_summary(services, user_id, claim.segment_id, summary)


def _finish(services: MultiscalePorts, user_id: str, session_id: str, claim: _Claim) -> _Claim | None:
    """Mark the summary complete, or re-claim it when a child changed while it was being produced."""
    with services.db.unit_of_work(user_id) as session:
        row = _owned(session, user_id, session_id, claim)
        if row is None:
            return None
        ready = _ready_children(
            _children(session, user_id, session_id, claim.key), claim.key, final=claim.final, exists=True
        )
        if ready is not None:
            children = _as_captions(ready)
            fp = fingerprint(children)
            if fp != claim.fingerprint:
                _stamp(row, ready, fp, owner_for(services.ingest_settings))
                for child in ready:
                    child.parent_segment_id = row.id
                logger.info("summary_children_changed", extra={"segment_id": str(row.id)})
                return _Claim(row.id, claim.key, fp, children, claim.final)
        row.processing_status = ProcessingStatus.COMPLETE
        row.enriched = True
        row.claim_owner = None
        row.updated_at = datetime.now(UTC)
        logger.info(
            "summary_completed",
            extra={
                "segment_id": str(row.id),
                "scale": claim.key.duration_seconds,
                "window_index": claim.key.window_index,
            },
        )
        return None


def _mark_failed(services: MultiscalePorts, user_id: str, session_id: str, claim: _Claim, error: str) -> None:
    with services.db.unit_of_work(user_id) as session:
        row = _owned(session, user_id, session_id, claim)
        if row is not None:
            row.processing_status = ProcessingStatus.FAILED
            row.claim_owner = None
            row.error = error[:2000]


def _is_complete(services: MultiscalePorts, user_id: str, session_id: str, key: SlotKey) -> bool:
    with services.db.unit_of_work(user_id) as session:
        row = _slot(session, user_id, session_id, key)
        return row is not None and row.processing_status == ProcessingStatus.COMPLETE


def _open_parents(services: MultiscalePorts, user_id: str, session_id: str, scale: int) -> list[SlotKey]:
    """Every summary slot of `scale` that has at least one complete child in the session."""
    with services.db.unit_of_work(user_id) as session:
        rows = session.execute(
            select(Segment.duration_seconds, Segment.window_index).where(
                Segment.user_id == user_id,
                Segment.session_id == session_id,
                Segment.processing_status == ProcessingStatus.COMPLETE,
                Segment.duration_seconds < scale,
            )
        ).all()
    keys = {parent_of(SlotKey(d, i)) for d, i in rows}
    return sorted(k for k in keys if k is not None and k.duration_seconds == scale)


def _map(fn: Callable[[SlotKey], SummaryOutcome], keys: list[SlotKey], concurrency: int) -> list[SummaryOutcome]:
    if concurrency <= 1 or len(keys) <= 1:
        return [fn(k) for k in keys]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(keys)), thread_name_prefix="multiscale") as pool:
        return list(pool.map(fn, keys))
