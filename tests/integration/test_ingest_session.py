"""ingest_session on real PostgreSQL: same artefacts as the window path, resumable, bounded concurrency."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select
from sqlalchemy.orm import aliased

from tests.support.memory import caption_answer, script_memory_models
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.models import Entity, ProcessingStatus, Segment, Triple, VoiceRow
from worldmm.errors import GpuUnavailableError
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.session import ingest_session
from worldmm.ingest.summary_schedule import on_session_end
from worldmm.ingest.window import ingest_window
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.objects import DirectoryObjectStore
from worldmm.media.transcription.port import WEARER, Transcript, TranscriptSegment, Voice
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.memory.visual.port import UnavailableVisualEncoder
from worldmm.services import Services

pytestmark = pytest.mark.integration

SESSION = "sess-offline"
VIDEO_START_MS = 1_777_000_000_000


class TimedTranscriber:
    """Speech to text for tests: one line every 10 s of the recording, numbered by its start second."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.calls: list[str] = []

    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript:
        self.calls.append(filename)
        segments = [TranscriptSegment(t, t + 10, f"words at {t}") for t in range(0, self.seconds, 10)]
        return Transcript(" ".join(s.text for s in segments), segments)


def _make_session(
    root: Path, windows: int, *, audio_start_ms: int = VIDEO_START_MS, session_id: str = SESSION
) -> Path:
    """A recorded session directory: metadata, a full recording, four frames per window."""
    root.mkdir(parents=True)
    meta = {
        "session_id": session_id,
        "window_count": windows,
        "video_start_ms": VIDEO_START_MS,
        "audio_start_ms": audio_start_ms,
    }
    (root / "metadata.json").write_text(json.dumps(meta))
    (root / "audio.m4a").write_bytes(b"m4a recording")
    for n in range(windows):
        window = root / f"window_{n}"
        window.mkdir()
        for f in range(4):
            (window / f"frame_{f:03d}.jpg").write_bytes(f"jpeg {n}-{f}".encode())
    return root


def _services(settings: Settings, db: Database, llm: ScriptedLLM, windows: int, **extra: Any) -> Services:
    return Services(
        settings,
        db=db,
        llm=llm,
        embedder=HashEmbedder(settings.embedding_dim),
        transcriber=TimedTranscriber(30 * windows),
        visual=UnavailableVisualEncoder("no GPU worker in tests"),
        **extra,
    )


def _artefacts(db: Database, user_id: str) -> dict[str, Any]:
    """A user's memory as sets of values (no ids): segments with their parent's slot, entities, triples."""
    with db.unit_of_work(user_id) as session:
        parent = aliased(Segment)
        segments = {
            (
                s.duration_seconds,
                s.window_index,
                s.caption,
                s.transcript,
                s.start_time,
                s.end_time,
                s.processing_status.value,
                (p_d, p_i),
            )
            for s, p_d, p_i in session.execute(
                select(Segment, parent.duration_seconds, parent.window_index).outerjoin(
                    parent, parent.id == Segment.parent_segment_id
                )
            )
        }
        entities = {(e.surface_form, e.canonical_name) for e in session.scalars(select(Entity))}
        subj, obj = aliased(Entity), aliased(Entity)
        triples = {
            (
                seg.duration_seconds,
                seg.window_index,
                t.memory_type.value,
                s,
                t.predicate,
                o or t.object_literal,
            )
            for t, seg, s, o in session.execute(
                select(Triple, Segment, subj.surface_form, obj.surface_form)
                .join(Segment, Segment.id == Triple.segment_id)
                .join(subj, subj.id == Triple.subject_entity_id)
                .outerjoin(obj, obj.id == Triple.object_entity_id)
            )
        }
    return {"segments": segments, "entities": entities, "triples": triples}


def test_ingest_session_produces_the_same_artefacts_as_the_window_path(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    # GIVEN one recorded session of 14 windows (7 minutes)
    windows = 14
    session_dir = _make_session(tmp_path / "session", windows)
    # AND the same files uploaded to the object store the live window path reads
    store = DirectoryObjectStore(tmp_path / "objects")
    shutil.copytree(session_dir, tmp_path / "objects" / "sessions" / SESSION)
    uploaded = tmp_path / "objects" / "sessions" / SESSION / "metadata.json"  # capture records the owner
    uploaded.write_text(json.dumps({**json.loads(uploaded.read_text()), "userId": "user-a"}))
    live = _services(settings, db, script_memory_models(ScriptedLLM()), windows, store=store)
    offline = _services(settings, db, script_memory_models(ScriptedLLM()), windows)
    # WHEN user A's windows go through ingest_window (shuffled) and the session ends
    for n in [5, 0, 13, 2, 7, 1, 12, 3, 9, 4, 6, 11, 8, 10]:
        ingest_window(
            live, IngestWindowEvent(sessionId=SESSION, userId="user-a", windowIndex=n, frameCount=4)
        )
    on_session_end(live, "user-a", SESSION)
    # AND user B's copy goes through ingest_session
    report = ingest_session(session_dir, "user-b", services=offline, concurrency=4, progress=False)
    # THEN both users have identical segments (captions, times, scales, parents), entities and triples
    a, b = _artefacts(db, "user-a"), _artefacts(db, "user-b")
    assert a["segments"] == b["segments"]
    assert a["entities"] == b["entities"]
    assert a["triples"] == b["triples"]
    # AND the memory is as expected: 14 windows, 3 min summaries 0-2 (2 partial), a partial 10 min one
    slots = sorted((d, i) for d, i, *_ in b["segments"])
    assert slots == [(30, n) for n in range(windows)] + [(180, 0), (180, 1), (180, 2), (600, 0)]
    assert any(t[2] == "semantic" for t in b["triples"])
    assert report.enriched == windows and not report.failed and report.summaries == 4
    # AND the full recording was transcribed once, each window got its own 30 s of it
    assert offline.transcriber.calls == ["audio.m4a"]  # type: ignore[attr-defined]
    transcripts = {i: t for d, i, _, t, *_ in b["segments"] if d == 30}
    assert transcripts[1] == "words at 30 words at 40 words at 50"


def test_ingest_session_aligns_transcript_with_audio_start_offset(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    # GIVEN audio that started 10 s before the video
    session_dir = _make_session(tmp_path / "s", 2, audio_start_ms=VIDEO_START_MS - 10_000)
    services = _services(settings, db, script_memory_models(ScriptedLLM()), 3)
    # WHEN ingested
    ingest_session(session_dir, "user-o", services=services, progress=False)
    # THEN window 0 (video 0-30 s) holds audio 10-40 s
    with db.unit_of_work("user-o") as session:
        first = session.scalars(
            select(Segment).where(Segment.window_index == 0, Segment.duration_seconds == 30)
        ).one()
    assert first.transcript == "words at 10 words at 20 words at 30"


def test_ingest_session_rerun_resumes_only_unfinished_windows(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    # GIVEN a 6-window session whose window 3 caption fails on the first run
    session_dir = _make_session(tmp_path / "s", 6)
    failing = script_memory_models(ScriptedLLM())

    def flaky_caption(request: LLMRequest) -> Any:
        if "words at 90" in request.prompt_text:
            return RuntimeError("model overloaded")
        return caption_answer(request)

    failing.script("caption", flaky_caption)
    first = ingest_session(
        session_dir, "user-r", services=_services(settings, db, failing, 6), concurrency=3, progress=False
    )
    assert list(first.failed) == [3] and first.enriched == 5
    with db.unit_of_work("user-r") as session:  # session end closed the window with the five it had
        [partial] = session.scalars(select(Segment).where(Segment.duration_seconds == 180)).all()
        assert (partial.caption or "").startswith("I went through 5 parts")
    # WHEN it is run again with a healthy model
    healthy = script_memory_models(ScriptedLLM())
    second = ingest_session(
        session_dir, "user-r", services=_services(settings, db, healthy, 6), concurrency=3, progress=False
    )
    # THEN only window 3 is captioned again, and the 3 min summary is re-produced from all six windows
    assert (second.enriched, second.skipped_complete, second.failed) == (1, 5, {})
    assert len(healthy.calls_for("caption")) == 1
    with db.unit_of_work("user-r") as session:
        [summary] = session.scalars(select(Segment).where(Segment.duration_seconds == 180)).all()
        assert summary.processing_status == ProcessingStatus.COMPLETE and summary.id == partial.id
        assert (summary.caption or "").startswith("I went through 6 parts")


def test_ingest_session_bounds_concurrent_model_calls(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    # GIVEN a session of 8 windows and a caption model that records how many calls are in flight
    session_dir = _make_session(tmp_path / "s", 8)
    llm = script_memory_models(ScriptedLLM())
    lock, in_flight, peak = threading.Lock(), [0], [0]

    def slow_caption(request: LLMRequest) -> Any:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1
        return caption_answer(request)

    llm.script("caption", slow_caption)
    # WHEN ingested with concurrency 3
    report = ingest_session(
        session_dir, "user-c", services=_services(settings, db, llm, 8), concurrency=3, progress=False
    )
    # THEN windows ran in parallel but never more than 3 at once
    assert report.enriched == 8
    assert peak[0] == 3


def test_ingest_session_without_a_recording_transcribes_each_windows_own_chunk(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    # GIVEN a session with no full recording, each window carrying its own audio chunk
    session_dir = _make_session(tmp_path / "s", 2)
    (session_dir / "audio.m4a").unlink()
    for n in range(2):
        (session_dir / f"window_{n}" / "audio.wav").write_bytes(b"RIFF-wav")
    services = _services(settings, db, script_memory_models(ScriptedLLM()), 1)
    # WHEN ingested
    report = ingest_session(session_dir, "user-w", services=services, progress=False)
    # THEN each window's chunk was transcribed on its own and is the window's transcript
    assert report.enriched == 2 and not report.failed
    assert services.transcriber.calls == ["audio.wav", "audio.wav"]  # type: ignore[attr-defined]
    with db.unit_of_work("user-w") as session:
        transcripts = session.scalars(select(Segment.transcript).where(Segment.duration_seconds == 30)).all()
    assert transcripts == ["words at 0 words at 10 words at 20"] * 2


def test_ingest_session_does_not_wait_for_the_gpu_a_gpu_outage_fails_the_window(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    # GIVEN the GPU is required for live windows, there is none, and window 1's caption finds it down
    session_dir = _make_session(tmp_path / "s", 2)
    llm = script_memory_models(ScriptedLLM())

    def caption(request: LLMRequest) -> Any:
        if "words at 30" in request.prompt_text:
            return GpuUnavailableError("GPU worker not answering")
        return caption_answer(request)

    llm.script("caption", caption)
    required = settings.model_copy(update={"ingest_requires_gpu": True})
    # WHEN ingested offline
    report = ingest_session(session_dir, "user-g", services=_services(required, db, llm, 2), progress=False)
    # THEN window 0 is enriched without a GPU check, and window 1 is failed (not left pending for a DLQ)
    assert report.enriched == 1 and list(report.failed) == [1]
    assert report.failed[1].startswith("GpuUnavailableError")
    with db.unit_of_work("user-g") as session:
        status = dict(
            session.execute(
                select(Segment.window_index, Segment.processing_status).where(Segment.duration_seconds == 30)
            ).all()
        )
    assert status == {0: ProcessingStatus.COMPLETE, 1: ProcessingStatus.FAILED}


class NamingTranscriber(TimedTranscriber):
    """Names the voices it is told to, and says which voices it was told it might hear."""

    def __init__(self, seconds: int, names: list[str]) -> None:
        super().__init__(seconds)
        self.names = names
        self.known: list[list[str]] = []

    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript:
        self.known.append(sorted(v.name for v in known))
        heard = super().transcribe(audio, filename)
        return Transcript(heard.text, heard.segments, [Voice(n, (1.0, 0.0), 10.0) for n in self.names])


def test_ingest_session_hears_a_recording_knowing_the_voices_the_users_other_recordings_named(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    # GIVEN a morning recording whose transcription names the wearer's voice and Katrina's
    transcriber = NamingTranscriber(60, [WEARER, "Katrina"])
    services = Services(
        settings,
        db=db,
        llm=script_memory_models(ScriptedLLM()),
        embedder=HashEmbedder(settings.embedding_dim),
        transcriber=transcriber,
        visual=UnavailableVisualEncoder("no GPU worker in tests"),
    )

    def ingest(name: str, user: str = "user-v") -> None:
        ingest_session(_make_session(tmp_path / name, 2, session_id=name), user, services=services, progress=False)

    ingest("morning")
    # WHEN the evening is ingested, then the morning again (a re-run of it), then another user's recording
    transcriber.names = [WEARER]
    ingest("evening")
    with db.unit_of_work("user-v") as session:
        session.execute(delete(Segment).where(Segment.session_id == "morning"))
    ingest_session(tmp_path / "morning", "user-v", services=services, progress=False)
    ingest("other", "user-w")
    # THEN the morning knew no voice; the evening knew the morning's; the morning's re-run knew only the
    # evening's (never its own); the other user's recording knew none of them
    assert transcriber.known == [[], ["Katrina", WEARER], [WEARER], []]
    # AND what each recording named is kept for its session, the re-run's in place of its first run's
    with db.unit_of_work("user-v") as session:
        kept = session.execute(select(VoiceRow.session_id, VoiceRow.name)).all()
    assert sorted(kept) == [("evening", WEARER), ("morning", WEARER)]


def test_the_summary_scheduler_is_entered_once_per_window_and_merges_each_summary_once(
    settings: Settings, db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a 14-window session (7 minutes), and a count of every entry into the summary scheduler's steps
    from worldmm.ingest import summary_schedule

    windows = 14
    entries: dict[str, list[object]] = {}
    for name in ("on_window_complete", "close_upwards", "produce_summary", "_may_be_due", "_claim"):
        real = getattr(summary_schedule, name)

        def counted(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            entries.setdefault(_name, []).append(args[3] if len(args) > 3 else None)
            return _real(*args, **kwargs)

        monkeypatch.setattr(summary_schedule, name, counted)
    services = _services(settings, db, script_memory_models(ScriptedLLM()), windows)
    summaries = [0]
    real_summarize = services.summarizer.summarize

    def summarize(*args: Any) -> Any:
        summaries[0] += 1
        return real_summarize(*args)

    monkeypatch.setattr(services.summarizer, "summarize", summarize)
    # WHEN the session is ingested
    report = ingest_session(_make_session(tmp_path / "walk", windows), "user-walk", services=services, progress=False)
    # THEN each window enters the scheduler once and looks at its parent slot with one unlocked read: a window
    # that is not its slot's last child goes no further (no lock, no claim)
    assert report.enriched == windows and report.summaries == 4
    assert sorted(entries["on_window_complete"]) == list(range(windows))  # type: ignore[type-var]
    assert len(entries["_may_be_due"]) == len(entries["close_upwards"])
    assert len(entries["close_upwards"]) <= windows + len(entries["produce_summary"])
    assert len(entries["produce_summary"]) == len(entries["_claim"]) < windows
    # AND each of the 4 summaries (3 min 0-2, 10 min 0) is merged once, none twice
    assert summaries[0] == 4
