"""Helpers for memory-construction tests: deterministic model scripts, window rows, a steerable embedder."""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from worldmm.db.models import Entity, ProcessingStatus, Segment, Triple
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services

BASE_TIME = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
_DESCRIPTIONS = re.compile(r"<descriptions>\n(.*?)\n</descriptions>", re.DOTALL)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def merge_answer(request: LLMRequest) -> dict[str, str]:
    """A deterministic merge: the summary names how many parts it merged and a digest of them."""
    match = _DESCRIPTIONS.search(request.prompt_text)
    body = match.group(1) if match else request.prompt_text
    return {"summary": f"I went through {body.count(chr(10)) + 1} parts with Alice (digest {_digest(body)})."}


def caption_answer(request: LLMRequest) -> dict[str, str]:
    """A deterministic caption from the transcript and the number of images."""
    images = sum(
        1
        for m in request.messages
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] != "text"
    )
    return {"caption": f"I look at {images} frames with Alice (digest {_digest(request.prompt_text)})."}


def script_memory_models(llm: ScriptedLLM) -> ScriptedLLM:
    """Every prompt of window enrichment and memory construction, answered deterministically."""
    return (
        llm.script("caption", caption_answer)
        .script("ner", {"entities": ["I", "Alice"]})
        .script("episodic_triples", {"triples": [["I", "talks with", "Alice"]]})
        .script("entity_confirm", {"decisions": []})
        .script("merge_captions", merge_answer)
        .script("semantic_triples", {"triples": [["I", "often drinks", "coffee"]]})
        .script(
            "consolidation", {"event": "NONE", "target_ids": [], "triple": None, "reason": "already known"}
        )
    )


def add_window(
    services: Services,
    user_id: str,
    session_id: str,
    window_index: int,
    caption: str | None = None,
    *,
    status: ProcessingStatus = ProcessingStatus.COMPLETE,
) -> uuid.UUID:
    """Insert a 30 s window segment as the window path leaves it (complete, captioned)."""
    start = BASE_TIME + timedelta(seconds=30 * window_index)
    with services.db.unit_of_work(user_id) as session:
        row = Segment(
            user_id=user_id,
            session_id=session_id,
            window_index=window_index,
            duration_seconds=30,
            start_time=start,
            end_time=start + timedelta(seconds=30),
            caption=caption if caption is not None else f"I am in window {window_index} with Alice.",
            processing_status=status,
            enriched=status == ProcessingStatus.COMPLETE,
        )
        session.add(row)
        session.flush()
        return row.id


def set_window_caption(
    services: Services,
    user_id: str,
    session_id: str,
    window_index: int,
    caption: str,
    status: ProcessingStatus,
) -> None:
    """Re-enrichment as retrigger force leaves it: a new caption and a status."""
    with services.db.unit_of_work(user_id) as session:
        row = session.scalars(
            select(Segment).where(
                Segment.session_id == session_id,
                Segment.window_index == window_index,
                Segment.duration_seconds == 30,
            )
        ).one()
        row.caption = caption
        row.processing_status = status


def summaries(services: Services, user_id: str, session_id: str) -> list[Segment]:
    """The session's summary segments (3 min and up), by scale then index."""
    with services.db.unit_of_work(user_id) as session:
        return list(
            session.scalars(
                select(Segment)
                .where(Segment.session_id == session_id, Segment.duration_seconds > 30)
                .order_by(Segment.duration_seconds, Segment.window_index)
            )
        )


def segment_triples(services: Services, user_id: str, segment_id: uuid.UUID) -> list[Triple]:
    with services.db.unit_of_work(user_id) as session:
        return list(session.scalars(select(Triple).where(Triple.segment_id == segment_id)))


def entity_names(services: Services, user_id: str) -> set[str]:
    with services.db.unit_of_work(user_id) as session:
        return {e.surface_form for e in session.scalars(select(Entity))}


class SteeredEmbedder:
    """HashEmbedder, except for texts given a vector explicitly (to place triples at known similarities)."""

    def __init__(self, dim: int, vectors: dict[str, list[float]] | None = None) -> None:
        self._hash = HashEmbedder(dim)
        self.vectors = dict(vectors or {})

    @property
    def dim(self) -> int:
        return self._hash.dim

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] if t in self.vectors else self._hash.embed([t])[0] for t in texts]
