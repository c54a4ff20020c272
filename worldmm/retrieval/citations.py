"""The citations of an answer: the memories it rests on, each with where its caption came from."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from sqlalchemy import text

from worldmm.retrieval.models import Citation, RetrievedMemory

if TYPE_CHECKING:
    from worldmm.retrieval.port import ComposePorts

logger = Logger(child=True)

# A summary's caption source: the distinct sources of the 30 s windows it spans ("heard+seen").
_CAPTION_SOURCES_SQL = """
SELECT s.id::text AS id, coalesce(s.caption_source, (
    SELECT string_agg(DISTINCT w.caption_source, '+' ORDER BY w.caption_source) FROM worldmm_segments w
    WHERE w.user_id = s.user_id AND w.duration_seconds = 30 AND w.caption_source IS NOT NULL
      AND w.start_time >= s.start_time AND w.end_time <= s.end_time)) AS source
FROM worldmm_segments s WHERE s.user_id = :user_id AND s.id = ANY(CAST(:ids AS uuid[]))
"""


def cite(services: ComposePorts, user_id: str, memories: list[RetrievedMemory]) -> list[Citation]:
    """The citations of `memories`; each segment's says where its caption came from (seen, tidied, heard)."""
    citations = [Citation.of(m) for m in memories]
    ids = [c.segment_id for c in citations if c.segment_id and _is_uuid(c.segment_id)]
    if not ids:
        return citations
    try:
        with services.db.unit_of_work(user_id) as session:
            rows = session.execute(text(_CAPTION_SOURCES_SQL), {"user_id": user_id, "ids": ids}).all()
    except Exception as exc:  # the answer stands without the sources; the log says why
        logger.warning("caption sources unavailable: %s", type(exc).__name__)
        return citations
    sources = {row.id: row.source for row in rows}
    return [c.model_copy(update={"caption_source": sources.get(c.segment_id or "")}) for c in citations]


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
