"""The citations of an answer: the memories it rests on, each with where its caption came from, and the quoted
sentence with when it was said and which memory keeps it."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger

from worldmm.db.queries.retrieval import caption_sources
from worldmm.retrieval.models import Citation, MemoryKind, RetrievedMemory
from worldmm.scale import Scale, label_of

if TYPE_CHECKING:
    from worldmm.retrieval.port import ComposePorts
    from worldmm.retrieval.sentences import Candidate

logger = Logger(child=True)


def cite(services: ComposePorts, user_id: str, memories: list[RetrievedMemory]) -> list[Citation]:
    """The citations of `memories`; each segment's says where its caption came from (seen, tidied, heard)."""
    citations = [Citation.of(m) for m in memories]
    ids = [c.segment_id for c in citations if c.segment_id and _is_uuid(c.segment_id)]
    if not ids:
        return citations
    try:
        with services.db.unit_of_work(user_id) as session:
            sources = caption_sources(session, user_id, ids)
    except Exception as exc:  # the answer stands without the sources; the log says why
        logger.warning("caption sources unavailable: %s", type(exc).__name__)
        return citations
    return [c.model_copy(update={"caption_source": sources.get(c.segment_id or "")}) for c in citations]


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def describe_when(moment: datetime, now: datetime) -> str:
    """`moment` in plain words relative to `now`: "this morning at 8:14", "yesterday at 19:42", ..."""
    if moment.tzinfo is not None and now.tzinfo is not None:
        moment = moment.astimezone(now.tzinfo)
    day, today = moment.date(), now.date()
    if day == today:
        part = "this morning" if moment.hour < 12 else "this afternoon" if moment.hour < 18 else "this evening"
        return f"{part} at {f'{moment.hour}:{moment.minute:02d}'}"
    if day == today - timedelta(days=1):
        return f"yesterday at {f'{moment.hour}:{moment.minute:02d}'}"
    year = f" {moment.year}" if moment.year != now.year else ""
    return f"on {moment:%A} {moment.day} {moment:%B}{year} at {f'{moment.hour}:{moment.minute:02d}'}"


def source_of(memory: RetrievedMemory) -> str:
    """Which memory a sentence comes from, in words."""
    if memory.memory_type == MemoryKind.SEMANTIC:
        return "from what you know (semantic memory)"
    seconds = memory.duration_seconds
    scale = label_of(seconds) + (" summary" if label_of(seconds) and seconds != Scale.WINDOW else "")
    kind = f"{scale} {memory.memory_type.value}".strip()
    span = (
        f" of {memory.start_time:%H:%M:%S}–{memory.end_time:%H:%M:%S}" if memory.start_time and memory.end_time else ""
    )
    return f"from your {kind} memory{span}"


def evidence(piece: Candidate, now: datetime) -> str:
    """The quote with when it was said and where it is kept: 'this morning at 8:14, heard: "..." (from ...)'."""
    memory = piece.memory
    when = describe_when(memory.start_time, now) if memory.start_time else ""
    lead = ", ".join(w for w in (when, "heard" if piece.heard else "") if w)
    return f'{lead + ": " if lead else ""}"{piece.quote}" ({source_of(memory)})'
