"""The citations of an answer: the memories it rests on, each with where its caption came from."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger

from worldmm.db.queries.retrieval import caption_sources
from worldmm.retrieval.models import Citation, RetrievedMemory

if TYPE_CHECKING:
    from worldmm.retrieval.port import ComposePorts

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
