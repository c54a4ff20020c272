"""ingest_session (spec 000 "Flow: ingestSession"): a whole recorded session directory, offline.

The directory mirrors the object store's `sessions/{sessionId}/` prefix:

    metadata.json            {session_id, window_count, video_start_ms, audio_start_ms, created_at?}
    audio.m4a | audio.wav    the full recording (optional; transcribed once)
    window_{n}/frame_*.jpg   the window's frames
    window_{n}/audio.wav     a window's own audio chunk (used when there is no full recording)

Stages: 1 metadata → 2 full-audio transcription aligned to 30 s windows (audio_start_ms offset) →
3 each window through the live path's own window routine (`worldmm.ingest.window.process_window`: its
frames from the directory, its words sliced from the recording; then `on_window_complete`, which also
runs stage 4 as windows close) → 4 partial windows closed at the end (`on_session_end`) → 5 semantic
triples from each 10 min summary (inside 4).

Windows run concurrently (at most `concurrency`, default `ingest_concurrency`); a window already
complete is skipped, so re-running after a crash resumes where it stopped.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from pydantic import BaseModel, ConfigDict, Field

from worldmm.config import LLMMode
from worldmm.errors import BadRequest
from worldmm.ingest.catalog.port import info_from_item
from worldmm.ingest.window import WindowOutcome, WindowSource, process_window
from worldmm.media.frames import list_frame_keys
from worldmm.media.objects import DirectoryObjectStore, ObjectNotFound
from worldmm.media.transcription.port import Transcript
from worldmm.memory.voices import known_voices, remember_voices

if TYPE_CHECKING:
    from worldmm.ingest.port import IngestSessionPorts

logger = Logger(child=True)


FULL_AUDIO_NAMES = ("audio.m4a", "audio.wav", "audio.mp3")


class SessionMetadata(BaseModel):
    """metadata.json (stage 1); user_id is never read from it."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    session_id: str = Field(min_length=1, max_length=128, alias="session_id")
    window_count: int = Field(ge=0)
    video_start_ms: int | None = None
    audio_start_ms: int | None = None
    created_at: str | int | None = None


@dataclass
class IngestSessionReport:
    """What one ingest_session run did."""

    session_id: str
    windows: int
    enriched: int = 0
    audio_only: int = 0
    skipped_complete: int = 0
    busy: int = 0
    failed: dict[int, str] = field(default_factory=dict)
    summaries: int = 0  # complete 3 min / 10 min / 1 h summaries of the session after the run
    wall_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "windows": self.windows,
            "enriched": self.enriched,
            "audio_only": self.audio_only,
            "skipped_complete": self.skipped_complete,
            "busy": self.busy,
            "failed": {str(k): v for k, v in sorted(self.failed.items())},
            "summaries": self.summaries,
            "wall_s": round(self.wall_s, 3),
        }


class SessionDirectoryStore:
    """The session directory seen as the object store's `sessions/{sessionId}/` prefix (read-only)."""

    def __init__(self, root: Path, session_id: str) -> None:
        self.prefix = f"sessions/{session_id}/"
        self._files = DirectoryObjectStore(root)

    def _relative(self, key: str) -> str:
        if not key.startswith(self.prefix):
            raise ObjectNotFound(key)
        return key[len(self.prefix) :]

    def get(self, key: str) -> bytes:
        return self._files.get(self._relative(key))

    def put(self, key: str, data: bytes) -> None:
        raise PermissionError("a session directory is read-only input")

    def exists(self, key: str) -> bool:
        return key.startswith(self.prefix) and self._files.exists(self._relative(key))

    def list(self, prefix: str) -> list[str]:
        if prefix.startswith(self.prefix):
            inner = prefix[len(self.prefix) :]
        elif self.prefix.startswith(prefix):
            inner = ""
        else:
            return []
        return [self.prefix + key for key in self._files.list(inner)]


@dataclass(frozen=True)
class _Session:
    """Everything a window worker needs, read once."""

    session_id: str
    created_at: datetime
    audio_offset_s: float
    transcript: Transcript | None
    store: SessionDirectoryStore


def load_metadata(session_dir: Path) -> SessionMetadata:
    """Stage 1: metadata.json, validated."""
    path = session_dir / "metadata.json"
    if not path.is_file():
        raise BadRequest(f"{session_dir} has no metadata.json")
    try:
        return SessionMetadata.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise BadRequest(f"invalid metadata.json: {exc}") from exc


def ingest_session(
    session_dir: str | Path,
    user_id: str,
    *,
    services: IngestSessionPorts,
    concurrency: int | None = None,
    progress: bool = True,
) -> IngestSessionReport:
    """Ingest a recorded session directory for `user_id` (stages 1–5); safe to re-run."""
    from worldmm.ingest.summary_schedule import complete_summaries, on_session_end

    services = services.with_backfill_llm()
    settings = services.ingest_settings
    batching = settings.llm_mode == LLMMode.BATCH
    # In batch mode every window waits on shared Batch jobs, so run enough of them to fill a job.
    default_workers = settings.batch_max_requests if batching else settings.ingest_concurrency
    workers = max(1, concurrency or default_workers)
    started = time.perf_counter()
    meta, session = _open_session(services, user_id, Path(session_dir))
    report = IngestSessionReport(session_id=meta.session_id, windows=meta.window_count)
    logger.info(
        "ingest_session_started",
        extra={"session_id": meta.session_id, "window_count": meta.window_count, "concurrency": workers},
    )
    _run_windows(services, user_id, session, meta.window_count, workers, progress, report)

    on_session_end(services, user_id, meta.session_id, concurrency=workers)
    report.summaries = complete_summaries(services.db, user_id, meta.session_id)
    report.wall_s = time.perf_counter() - started
    logger.info("ingest_session_completed", extra=report.as_dict())
    return report


def _open_session(services: IngestSessionPorts, user_id: str, root: Path) -> tuple[SessionMetadata, _Session]:
    """Stages 1–2: the directory's metadata, its windows' place in time, and (unless every window is
    complete already) the full recording transcribed."""
    settings = services.ingest_settings
    meta = load_metadata(root)
    raw = json.loads((root / "metadata.json").read_text(encoding="utf-8"))
    created_at = info_from_item(meta.session_id, raw).created_at
    if created_at is None:
        raise BadRequest("metadata.json needs created_at or video_start_ms to place the windows in time")
    offset = 0.0
    if meta.video_start_ms is not None and meta.audio_start_ms is not None:
        offset = (meta.video_start_ms - meta.audio_start_ms) / 1000.0
    store = SessionDirectoryStore(root, meta.session_id)
    # A re-run whose windows are all complete skips the (slow) full transcription.
    incomplete = _incomplete_window_count(services, user_id, meta.session_id, meta.window_count)
    span = (created_at, created_at + timedelta(seconds=meta.window_count * settings.window_seconds))
    transcript = _transcribe_full(services, user_id, meta.session_id, span, root) if incomplete else None
    return meta, _Session(meta.session_id, created_at, offset, transcript, store)


def _run_windows(
    services: IngestSessionPorts,
    user_id: str,
    session: _Session,
    window_count: int,
    workers: int,
    progress: bool,
    report: IngestSessionReport,
) -> None:
    """Stage 3: every window through the window routine, `workers` at a time, each outcome counted in `report`."""
    from tqdm import tqdm

    with (
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest-session") as pool,
        tqdm(total=window_count, desc=f"session {session.session_id}", unit="window", disable=not progress) as bar,
    ):
        futures = {pool.submit(_ingest_window, services, user_id, session, n): n for n in range(window_count)}
        for future in as_completed(futures):
            n = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # one window failing never stops the others; re-run retries it
                report.failed[n] = f"{type(exc).__name__}: {exc}"
                logger.warning("ingest_session_window_failed", extra={"window_index": n, "error": str(exc)})
            else:
                setattr(report, outcome, getattr(report, outcome) + 1)
            bar.update(1)


def _incomplete_window_count(services: IngestSessionPorts, user_id: str, session_id: str, window_count: int) -> int:
    """How many of the session's 30 s windows are not complete yet."""
    from sqlalchemy import func, select

    from worldmm.db.models import ProcessingStatus, Segment

    with services.db.unit_of_work(user_id) as session:
        complete = session.scalar(
            select(func.count()).where(
                Segment.session_id == session_id,
                Segment.duration_seconds == services.ingest_settings.window_seconds,
                Segment.window_index < window_count,
                Segment.processing_status == ProcessingStatus.COMPLETE,
            )
        )
    return window_count - (complete or 0)


def _transcribe_full(
    services: IngestSessionPorts, user_id: str, session_id: str, span: tuple[datetime, datetime], root: Path
) -> Transcript | None:
    """Stage 2: the full recording transcribed once, knowing the voices the user's other sessions named (and
    remembering those this one names), or None when the session has none."""
    for name in FULL_AUDIO_NAMES:
        path = root / name
        if path.is_file():
            known = known_voices(services.db, user_id, other_than=session_id)
            transcript = services.transcriber.transcribe(path.read_bytes(), name, known=known)
            kept = remember_voices(services.db, user_id, session_id, transcript.voices, start=span[0], end=span[1])
            logger.info(
                "transcription_complete",
                extra={"transcript_length": len(transcript.text), "voices_known": len(known), "voices_kept": kept},
            )
            return transcript
    return None


# Where each outcome of the window routine counts in the report (ENRICHED: `enriched`, or `audio_only`
# for a window without frames whose transcript was enriched).
_REPORT_FIELDS = {
    WindowOutcome.TRANSCRIPT_ONLY: "audio_only",
    WindowOutcome.ALREADY_COMPLETE: "skipped_complete",
    WindowOutcome.BUSY: "busy",
    WindowOutcome.EXHAUSTED: "busy",
    WindowOutcome.FORGOTTEN: "busy",
    WindowOutcome.CLAIM_LOST: "busy",
}


def _ingest_window(services: IngestSessionPorts, user_id: str, session: _Session, window_index: int) -> str:
    """Stage 3 for one window (the window routine on the directory's material); the report field."""
    from worldmm.ingest.summary_schedule import on_window_complete

    keys = list_frame_keys(session.store, session.session_id, window_index)
    result = process_window(
        services,
        user_id,
        session.session_id,
        window_index,
        created_at=session.created_at,
        source=WindowSource(session.store, keys, session.transcript, session.audio_offset_s),
        # unguarded: a summary failing here counts the window failed, and a re-run resumes it
        on_complete=partial(on_window_complete, services, user_id, session.session_id, window_index),
    )
    if result.outcome == WindowOutcome.ENRICHED:
        return "enriched" if keys else "audio_only"
    return _REPORT_FIELDS[result.outcome]
