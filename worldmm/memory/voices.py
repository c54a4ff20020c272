"""The voices a wearer's recordings named, kept per session (`worldmm_voices`, migration 0015): the wearer's,
and each one the wearer called by name. A later recording is transcribed knowing them, so a voice nobody names
there is still known ("Katrina: I leave for the bakery at six." in the evening, where she was named in the
morning). Forgetting a session forgets its voices (`worldmm.timeline.forget_span`); forget-me, all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, select

from worldmm.db.engine import Database
from worldmm.db.models import VoiceRow
from worldmm.db.tombstones import is_forgotten, lock_claiming
from worldmm.media.transcription.port import Voice


def known_voices(db: Database, user_id: str, *, other_than: str) -> list[Voice]:
    """The voices the user's other sessions named (a session is never known from itself)."""
    with db.unit_of_work(user_id) as session:
        rows = session.scalars(
            select(VoiceRow).where(VoiceRow.user_id == user_id, VoiceRow.session_id != other_than)
        ).all()
        return [Voice(row.name, tuple(row.vector), row.seconds) for row in rows]


def remember_voices(
    db: Database, user_id: str, session_id: str, voices: Sequence[Voice], *, start: datetime, end: datetime
) -> int:
    """Keep the voices `session_id` named, in place of what an earlier run of it kept; none when the session, or
    a span of [start, end), was forgotten. How many were kept."""
    with db.unit_of_work(user_id) as session:
        lock_claiming(session, user_id)  # a span erase in progress finishes first; a later one finds the rows
        session.execute(delete(VoiceRow).where(VoiceRow.user_id == user_id, VoiceRow.session_id == session_id))
        if is_forgotten(session, user_id, session_id, start, end):
            return 0
        heard = [v for v in voices if v.seconds > 0]
        session.add_all(
            VoiceRow(
                user_id=user_id,
                session_id=session_id,
                name=v.name,
                vector=list(v.vector),
                seconds=v.seconds,
                recorded_from=start,
                recorded_to=end,
            )
            for v in heard
        )
        return len(heard)
