"""Pre-captioned 30 s windows (a benchmark, an import) written as memory, the way the live pipeline writes it.

Each window becomes a `complete` segment with its caption, transcript and caption embedding, its
entities (resolved like every other path: `resolve_entities`) and episodic triples; then each session's
3 min / 10 min / 1 h summaries and the semantic triples of its 10 min summaries are produced by the live
multiscale code (`on_session_end`). Only the model calls differ from the window path: captions are
given, and work is batched — one extraction pass, one embedding call per kind and one transaction per
chunk of windows (TEXT_INGEST_CHUNK), never per window or per entity.

Resumable: complete windows are skipped, so a re-run finishes what an interrupted one left; summaries
already produced from the same children are left alone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from worldmm.db.models import ProcessingStatus, Segment
from worldmm.ingest.enrichment import invalidate_episodic_graph
from worldmm.ingest.summary_schedule import complete_summaries, on_session_end
from worldmm.llm.usage import UsageLog
from worldmm.memory.embedding.port import CachingEmbedder
from worldmm.memory.entities import resolve_entities
from worldmm.memory.episodic.segment_text import segment_memory_text
from worldmm.memory.episodic.triples import (
    delete_derivatives_of,
    insert_triples,
    prepare_triple_groups,
    triple_entity_forms,
)
from worldmm.scale import Scale

if TYPE_CHECKING:
    from worldmm.ingest.port import TextWindowPorts
    from worldmm.memory.openie import Extraction

logger = Logger(child=True)


MAX_CONTEXT_CHARS = 1500


@dataclass(frozen=True)
class TextWindow:
    """One pre-captioned 30 s window: its place in a session, its span (tz-aware UTC) and its text."""

    session_id: str
    window_index: int
    start_time: datetime
    end_time: datetime
    caption: str
    transcript: str = ""

    def __post_init__(self) -> None:
        if self.start_time.tzinfo is None or self.end_time.tzinfo is None:
            raise ValueError("TextWindow times must be timezone-aware")


@dataclass
class TextIngestReport:
    """What one `ingest_text_windows` call did."""

    windows: int = 0
    skipped: int = 0  # already complete
    written: int = 0
    entities: int = 0  # surface forms resolved (new or known)
    triples: int = 0  # episodic triples of the windows
    summaries: int = 0  # summaries newly complete (all scales)
    sessions: int = 0
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # seconds per step, for profiling

    def time(self, step: str, started: float) -> None:
        self.timings[step] = self.timings.get(step, 0.0) + time.perf_counter() - started


def ingest_text_windows(
    services: TextWindowPorts,
    user_id: str,
    windows: Sequence[TextWindow],
    *,
    progress: Callable[[int], object] | None = None,
) -> TextIngestReport:
    """Write `windows` as complete segments with entities, triples, summaries and semantic triples.

    Sessions are handled one after the other (windows, then that session's summaries). `progress` is
    called with the number of windows just finished (skipped ones included); a session's last windows
    count as finished once its summaries are.
    """
    started = time.perf_counter()
    report = TextIngestReport(windows=len(windows))
    # The same fact recurs across windows and in the summaries above them: embed each text once.
    if not isinstance(services.embedder, CachingEmbedder):
        services = services.replace(embedder=CachingEmbedder(services.embedder))
    by_session: dict[str, list[TextWindow]] = {}
    for window in sorted(windows, key=lambda w: (w.session_id, w.window_index)):
        by_session.setdefault(window.session_id, []).append(window)
    chunk = max(1, services.ingest_settings.text_ingest_chunk)
    for session_id, session_windows in by_session.items():
        _ingest_session(services, user_id, session_id, session_windows, chunk, report, progress)
    report.seconds = time.perf_counter() - started
    logger.info(
        "text_windows_ingested",
        extra={
            "user_id": user_id,
            "windows": report.windows,
            "written": report.written,
            "skipped": report.skipped,
            "summaries": report.summaries,
            "seconds": round(report.seconds, 2),
            "timings": {k: round(v, 2) for k, v in report.timings.items()},
        },
    )
    return report


def _ingest_session(
    services: TextWindowPorts,
    user_id: str,
    session_id: str,
    session_windows: list[TextWindow],
    chunk: int,
    report: TextIngestReport,
    progress: Callable[[int], object] | None,
) -> None:
    """One session's windows not complete yet, a chunk per transaction in window order, then its summaries."""
    done = _complete_indexes(services, user_id, session_id, [w.window_index for w in session_windows])
    todo = [w for w in session_windows if w.window_index not in done]
    report.skipped += len(session_windows) - len(todo)
    held = len(session_windows) - len(todo)  # reported with the session's summaries
    batches = [todo[start : start + chunk] for start in range(0, len(todo), chunk)]
    # Extraction (spaCy: mostly Python) runs one chunk ahead of the embeddings and writes (torch and
    # PostgreSQL: outside the GIL), so both cores work; the writes stay in window order.
    ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="text-extract")
    try:
        extracted = [ahead.submit(_extract, services, batch) for batch in batches]
        for n, (batch, future) in enumerate(zip(batches, extracted, strict=True)):
            _write_chunk(services, user_id, batch, future.result(), report)
            if n + 1 < len(batches):
                _report(progress, len(batch))
            else:
                held += len(batch)
    finally:
        ahead.shutdown(cancel_futures=True)
    t = time.perf_counter()
    before = complete_summaries(services.db, user_id, session_id)
    on_session_end(services, user_id, session_id, concurrency=services.ingest_settings.text_ingest_summary_concurrency)
    report.summaries += complete_summaries(services.db, user_id, session_id) - before
    report.time("summaries", t)
    report.sessions += 1
    _report(progress, held)


def _report(progress: Callable[[int], object] | None, count: int) -> None:
    if progress is not None and count:
        progress(count)


def _complete_indexes(services: TextWindowPorts, user_id: str, session_id: str, indexes: list[int]) -> set[int]:
    with services.db.unit_of_work(user_id) as session:
        rows = session.scalars(
            select(Segment.window_index).where(
                Segment.user_id == user_id,
                Segment.session_id == session_id,
                Segment.duration_seconds == Scale.WINDOW,
                Segment.processing_status == ProcessingStatus.COMPLETE,
                Segment.window_index.in_(indexes),
            )
        )
        return set(rows)


@dataclass(frozen=True)
class _Extracted:
    """A chunk's extractions, the model usage they cost and the seconds they took."""

    extractions: list[Extraction]
    usage: UsageLog
    seconds: float


def _extract(services: TextWindowPorts, batch: list[TextWindow]) -> _Extracted:
    usage = UsageLog()
    started = time.perf_counter()
    extractions = services.extractor.extract_many([f"{w.caption}\n{w.transcript}".strip() for w in batch], usage)
    return _Extracted(extractions, usage, time.perf_counter() - started)


def _write_chunk(
    services: TextWindowPorts, user_id: str, batch: list[TextWindow], extracted: _Extracted, report: TextIngestReport
) -> None:
    """Resolve and embed a chunk of extracted windows (no transaction open), then write it in one."""
    usage, extractions = extracted.usage, extracted.extractions
    report.timings["extract"] = report.timings.get("extract", 0.0) + extracted.seconds  # overlaps the rest

    t = time.perf_counter()
    forms = list(dict.fromkeys(f for x in extractions for f in triple_entity_forms(x.triples, x.entities)))
    context = " ".join(w.caption for w in batch)[:MAX_CONTEXT_CHARS]
    entity_ids = resolve_entities(services, user_id, forms, context, usage=usage)
    report.time("entities", t)

    t = time.perf_counter()
    prepared = prepare_triple_groups([x.triples for x in extractions], entity_ids)
    report.time("embed_triples", t)
    t = time.perf_counter()
    vectors = services.embedder.embed([segment_memory_text(w.caption, w.transcript) for w in batch])
    report.time("embed_captions", t)

    t = time.perf_counter()
    stored = 0
    with services.db.unit_of_work(user_id) as session:
        ids = _upsert_segments(session, user_id, batch, vectors)
        delete_derivatives_of(session, user_id, list(ids.values()))  # a retried window starts clean
        for window, triples in zip(batch, prepared, strict=True):
            segment_id = ids.get((window.session_id, window.window_index))
            if segment_id is not None:
                stored += insert_triples(session, user_id, segment_id, triples)
        usage.flush(session, user_id, None)
    report.time("write", t)
    if stored:
        invalidate_episodic_graph(services, user_id, Scale.WINDOW)
    report.written += len(batch)
    report.entities += len(entity_ids)
    report.triples += stored


def _upsert_segments(
    session: Session, user_id: str, batch: list[TextWindow], vectors: list[list[float]]
) -> dict[tuple[str, int], uuid.UUID]:
    """Insert the windows' rows complete, or complete the pending/failed rows already there."""
    rows = [
        {
            "id": uuid.uuid4(),
            "user_id": user_id,
            "session_id": w.session_id,
            "source_session_id": w.session_id,
            "window_index": w.window_index,
            "duration_seconds": Scale.WINDOW,
            "start_time": w.start_time,
            "end_time": w.end_time,
            "caption": w.caption or None,
            "transcript": w.transcript or None,
            "caption_embedding": vector,
            "processing_status": ProcessingStatus.COMPLETE,
            "enriched": True,
            "visual_stored": False,
            "frame_count": 0,
        }
        for w, vector in zip(batch, vectors, strict=True)
    ]
    stmt = insert(Segment).values(rows)
    updated = {
        name: stmt.excluded[name]
        for name in ("start_time", "end_time", "caption", "transcript", "caption_embedding", "processing_status")
    }
    result = session.execute(
        stmt.on_conflict_do_update(
            constraint="uq_segment_window",
            set_={
                **updated,
                "enriched": True,
                "error": None,
                "claim_token": None,
                "claimed_at": None,
                "claim_owner": None,
                "updated_at": func.now(),
            },
            where=Segment.processing_status != ProcessingStatus.COMPLETE,
        ).returning(Segment.session_id, Segment.window_index, Segment.id)
    )
    return {(s, i): segment_id for s, i, segment_id in result}
