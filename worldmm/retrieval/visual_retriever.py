"""Visual retrieval (spec 001 "Visual Query Path"): query text → visual encoder → cosine top-k → frames.

With no visual encoder (GPU worker stopped, starting, or not configured) the result is empty with a
reason, and the agent carries on with episodic and semantic memory (graceful degradation).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger

from worldmm.db.queries.retrieval import nearest_visual_segments
from worldmm.errors import GpuRequestError, GpuUnavailableError, UnavailableError
from worldmm.memory.episodic.segment_text import segment_memory_text
from worldmm.retrieval.models import MemoryKind, RetrievalResult, RetrievedMemory

if TYPE_CHECKING:
    from worldmm.retrieval.port import VisualRetrievalPorts

logger = Logger(child=True)


def _frame_keys(services: VisualRetrievalPorts, session_id: str, window_index: int) -> list[str]:
    from worldmm.media.frames import list_frame_keys, uniform_sample

    try:
        keys = list_frame_keys(services.store, session_id, window_index)
    except Exception as exc:  # frames are a bonus to the caption; a storage hiccup must not fail the search
        logger.warning("could not list frames of %s/%s: %s", session_id, window_index, exc)
        return []
    return uniform_sample(keys, services.retrieval_settings.sample_frames)


def retrieve_visual(
    services: VisualRetrievalPorts, user_id: str, query: str, *, now: datetime | None = None
) -> RetrievalResult:
    """Windows (ended by `now`) whose clips look most like `query`, with their frame keys."""
    settings = services.retrieval_settings
    until = now or datetime.now(UTC)
    try:
        embedding = services.visual.encode_text(query)
    except (UnavailableError, GpuUnavailableError, GpuRequestError) as exc:
        logger.info("visual retrieval unavailable: %s", exc)
        return RetrievalResult(memory_type=MemoryKind.VISUAL, query=query, reason=f"visual encoder unavailable: {exc}")
    with services.db.unit_of_work(user_id) as session:
        rows = nearest_visual_segments(session, user_id, embedding, settings.visual_top_k, until)
    items = [
        RetrievedMemory(
            id=str(row.id),
            memory_type=MemoryKind.VISUAL,
            text=segment_memory_text(row.caption, row.transcript) or "(no caption)",
            score=1.0 - float(row.distance),
            source="cosine",
            start_time=row.start_time,
            end_time=row.end_time,
            duration_seconds=row.duration_seconds,
            segment_id=str(row.id),
            frame_keys=_frame_keys(services, row.session_id, row.window_index) if row.s3_frames_key else [],
        )
        for row in rows
    ]
    return RetrievalResult(
        memory_type=MemoryKind.VISUAL,
        query=query,
        items=items,
        reason=None if items else "no visual memories yet",
    )
