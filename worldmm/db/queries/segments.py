"""A window's segment row completed: `complete`, its claim cleared, with what the window yielded."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, func, update
from sqlalchemy.orm import Session

from worldmm.db.models import ProcessingStatus, Segment

_SEGMENTS = cast(Table, Segment.__table__)


def complete_segment(
    session: Session, user_id: str, segment_id: uuid.UUID, claim_token: uuid.UUID | None, **content: Any
) -> tuple[datetime, int] | None:
    """Mark the user's segment complete with `content` (its transcript, caption, … columns) while `claim_token`
    (if any) still holds it; its start time and duration, None when it is not held (or not there)."""
    complete = update(_SEGMENTS).where(_SEGMENTS.c.user_id == user_id, _SEGMENTS.c.id == segment_id)
    if claim_token is not None:
        complete = complete.where(_SEGMENTS.c.claim_token == claim_token)
    completed = session.execute(
        complete.values(
            processing_status=ProcessingStatus.COMPLETE,
            error=None,
            claim_token=None,
            claimed_at=None,
            claim_owner=None,
            updated_at=func.now(),
            **content,
        ).returning(_SEGMENTS.c.start_time, _SEGMENTS.c.duration_seconds)
    ).one_or_none()
    if completed is None:
        return None
    start_time, scale = completed
    return start_time, scale
