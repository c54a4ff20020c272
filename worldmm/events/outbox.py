"""The outbox: app events written in the transaction of the write they report, published after it commits.

Window outcomes are written by a trigger on the segments table (migration 0019); `SessionProcessed` by
`record` in the transaction that finds the session done. `publish_pending` hands what is unpublished to the
publisher and only then marks it published: killed between the two, the events are published again by the
next call (at least once; the id makes a duplicate detectable). `prune_published` deletes events published
longer ago than a retention (the SSE stream replays what is left).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from worldmm.crashpoints import crash_point
from worldmm.db.engine import Database
from worldmm.db.models import EventOutboxRow
from worldmm.db.queries import events as queries
from worldmm.events.models import app_event
from worldmm.events.port import Event, EventPublisher

BATCH = 100
PRUNE_BATCH = 5_000


def event_id(user_id: str, subject: str) -> uuid.UUID:
    """The id of the event about `subject` (the trigger's `md5(user || ':' || subject)::uuid`)."""
    return uuid.UUID(hashlib.md5(f"{user_id}:{subject}".encode(), usedforsecurity=False).hexdigest())


def record(
    session: Session, user_id: str, session_id: str, subject: str, detail_type: str, detail: dict[str, Any]
) -> bool:
    """Add the event about `subject` in `session`'s transaction; False when it was recorded before."""
    added = session.execute(
        insert(EventOutboxRow)
        .values(
            id=event_id(user_id, subject),
            user_id=user_id,
            session_id=session_id,
            subject=subject,
            detail_type=detail_type,
            detail=detail,
        )
        .on_conflict_do_nothing()
        .returning(EventOutboxRow.id)
    ).first()
    return added is not None


def _event(row: Any) -> Event:
    return app_event(row.id, row.seq, row.user_id, row.session_id, row.detail_type, row.detail, row.created_at)


_COLUMNS = (
    EventOutboxRow.id,
    EventOutboxRow.seq,
    EventOutboxRow.user_id,
    EventOutboxRow.session_id,
    EventOutboxRow.detail_type,
    EventOutboxRow.detail,
    EventOutboxRow.created_at,
)


def unpublished(db: Database, user_id: str | None, limit: int = BATCH) -> list[Event]:
    """Events not yet published, oldest first: `user_id`'s, or (None) every user's."""
    with db.unit_of_work(user_id) as session:
        if user_id is None:
            rows = queries.unpublished_events(session, limit)
        else:
            rows = session.execute(
                select(*_COLUMNS)
                .where(EventOutboxRow.user_id == user_id, EventOutboxRow.published_at.is_(None))
                .order_by(EventOutboxRow.seq)
                .limit(limit)
            ).all()
    return [_event(r) for r in rows]


def mark_published(db: Database, events: Sequence[Event]) -> int:
    """Mark `events` published (whoever owns them); the number newly marked."""
    if not events:
        return 0
    ids = "{" + ",".join(e.eventId for e in events) + "}"
    with db.unit_of_work(None) as session:
        return queries.mark_events_published(session, ids)


def publish_in(session: Session, publisher: EventPublisher, user_id: str, limit: int = BATCH) -> int:
    """In `session` (a unit of work of `user_id`): publish the user's unpublished events, then mark them; the
    number published. Rows another dispatcher holds are skipped (it publishes them). Raises what the publisher
    raised; killed after the publish and before the commit, the events are published again later."""
    rows = session.execute(
        select(*_COLUMNS)
        .where(EventOutboxRow.user_id == user_id, EventOutboxRow.published_at.is_(None))
        .order_by(EventOutboxRow.seq)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    if not rows:
        return 0
    events = [_event(r) for r in rows]
    crash_point("events.before_publish")
    publisher.publish(events)
    crash_point("events.published")
    session.execute(
        update(EventOutboxRow)
        .where(EventOutboxRow.user_id == user_id, EventOutboxRow.id.in_([r.id for r in rows]))
        .values(published_at=func.now())
    )
    return len(events)


def publish_pending(db: Database, publisher: EventPublisher, user_id: str | None = None) -> int:
    """Publish every unpublished event (`user_id`'s, or every user's), then mark it; the number published.

    Raises what the publisher raised: the events stay unpublished for the next call."""
    if user_id is not None:
        with db.unit_of_work(user_id) as session:
            return publish_in(session, publisher, user_id)
    published = 0
    while events := unpublished(db, None):
        crash_point("events.before_publish")
        publisher.publish(events)
        crash_point("events.published")
        mark_published(db, events)
        published += len(events)
        if len(events) < BATCH:
            break
    return published


def events_after(db: Database, user_id: str, after_seq: int, limit: int = BATCH) -> list[Event]:
    """`user_id`'s events after position `after_seq` of their stream, published or not (the SSE stream)."""
    with db.unit_of_work(user_id) as session:
        rows = session.execute(
            select(*_COLUMNS)
            .where(EventOutboxRow.user_id == user_id, EventOutboxRow.seq > after_seq)
            .order_by(EventOutboxRow.seq)
            .limit(limit)
        ).all()
    return [_event(r) for r in rows]


def last_seq(db: Database, user_id: str) -> int:
    """The position of `user_id`'s latest event (0: none yet)."""
    with db.unit_of_work(user_id) as session:
        latest = select(func.coalesce(func.max(EventOutboxRow.seq), 0)).where(EventOutboxRow.user_id == user_id)
        return int(session.scalar(latest) or 0)


def sessions_awaiting_event(db: Database, within_s: int, limit: int) -> list[tuple[str, str]]:
    """(user, session) pairs with window events in the last `within_s` seconds and no `SessionProcessed`."""
    with db.unit_of_work(None) as session:
        rows = queries.sessions_awaiting_event(session, within_s, limit)
    return [(r.user_id, r.session_id) for r in rows]


def prune_published(db: Database, keep_s: int) -> int:
    """Delete every user's events published more than `keep_s` seconds ago (the database keeps at least 8 days:
    migration 0021), a batch a transaction; how many went."""
    pruned = 0
    while True:
        with db.unit_of_work(None) as session:
            batch = queries.prune_published_events(session, keep_s, PRUNE_BATCH)
        pruned += batch
        if batch < PRUNE_BATCH:
            return pruned
