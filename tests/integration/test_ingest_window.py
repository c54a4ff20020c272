"""IngestWindowFunction: every spec 000 ingestWindow path on real PostgreSQL with zero-latency models."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest
from sqlalchemy import select, update

from tests.support.ingest import (
    CAPTION,
    SESSION,
    USER,
    StaticTranscriber,
    StubVisualEncoder,
    counts,
    failing,
    lambda_context,
    make_ingest_services,
    put_session,
    put_window,
    script_window_models,
    segment_id_of,
    transcriber_of,
    visual_of,
    window_segment,
)
from worldmm.db.models import LLMUsage, ProcessingStatus, Segment, Triple
from worldmm.errors import GpuUnavailableError
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.transcription.port import Transcript, TranscriptSegment
from worldmm.services import set_services

pytestmark = pytest.mark.integration


def scripted(svc) -> ScriptedLLM:
    return cast(ScriptedLLM, svc.llm)


def event(index: int = 0, frame_count: int = 20) -> IngestWindowEvent:
    return IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=index, frameCount=frame_count)


@pytest.fixture
def svc(settings, db, scripted_llm, tmp_path):
    script_window_models(scripted_llm)
    services = make_ingest_services(settings, db, scripted_llm, tmp_path / "objects")
    put_session(services.store)
    return services


def test_ingest_window_happy_path_stores_segment_entities_triples_and_visual(svc, db):
    # GIVEN a window with 20 frames and an audio chunk
    put_window(svc.store, frames=20)
    # WHEN it is ingested
    result = ingest_window(svc, event())
    # THEN the spec's enriched result comes back and every artefact is stored once
    assert result.model_dump() == {
        "status": "ok",
        "segmentId": segment_id_of(result),
        "enriched": True,
        "entityCount": 3,
        "tripleCount": 3,
        "visualStored": True,
    }
    seg = window_segment(db)
    assert seg is not None and str(seg.id) == segment_id_of(result)
    assert seg.processing_status == ProcessingStatus.COMPLETE
    assert seg.caption == CAPTION and seg.enriched and seg.visual_stored
    assert seg.transcript == "Kate: want some tea?"
    assert seg.caption_embedding is not None and seg.claim_token is None
    assert seg.start_time == datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
    assert seg.end_time - seg.start_time == timedelta(seconds=30)
    assert counts(db) == {"segments": 1, "entities": 3, "triples": 3, "visual": 1}
    # 16 frames sampled once: the encoder gets all 16, the captioner 4 of them as data URLs
    assert visual_of(svc).calls == [16]
    images = [
        p for p in scripted(svc).calls_for("caption")[0].messages[-1]["content"] if p["type"] == "image_url"
    ]
    assert len(images) == 4 and images[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")


def test_ingest_window_happy_path_links_triples_to_canonical_entities_and_literals(svc, db):
    put_window(svc.store)
    ingest_window(svc, event())
    with db.unit_of_work(USER) as session:
        triples = session.execute(select(Triple)).scalars().all()
    literal = [t for t in triples if t.object_literal is not None]
    assert [t.object_literal for t in literal] == ["a red mug"]
    # episodic triples carry no vector: no query ranks them by cosine (migration 0017)
    assert all(t.embedding is None and t.memory_type == "episodic" for t in triples)
    assert sum(t.object_entity_id is not None for t in triples) == 2


def test_ingest_window_records_usage_for_every_model_call(svc, db):
    put_window(svc.store)
    result = ingest_window(svc, event())
    with db.unit_of_work(USER) as session:
        rows = session.execute(select(LLMUsage)).scalars().all()
    assert sorted(r.purpose for r in rows) == ["caption", "episodic_triples", "ner"]
    assert all(str(r.segment_id) == segment_id_of(result) and r.prompt_tokens > 0 for r in rows)


def test_ingest_window_audio_only_returns_enriched_false_when_audio_enrichment_off(
    settings, db, scripted_llm, tmp_path
):
    # GIVEN ENRICH_AUDIO_ONLY=false and a window with audio but no frames
    svc = make_ingest_services(
        settings.model_copy(update={"enrich_audio_only": False}), db, scripted_llm, tmp_path
    )
    put_window(svc.store, frames=0)
    # WHEN ingested with frameCount 0
    result = ingest_window(svc, event(frame_count=0))
    # THEN exactly the spec's audio-only result; the transcript is stored, no model was called
    assert result.model_dump() == {"status": "ok", "segmentId": segment_id_of(result), "enriched": False}
    seg = window_segment(db)
    assert seg is not None and seg.processing_status == ProcessingStatus.COMPLETE and not seg.enriched
    assert seg.transcript == "Kate: want some tea?"
    assert scripted_llm.calls == []


def test_ingest_window_audio_only_enriches_transcript_as_text(svc, db):
    # GIVEN an audio-only window (ENRICH_AUDIO_ONLY default true)
    put_window(svc.store, frames=0)
    result = ingest_window(svc, event(frame_count=0))
    # THEN it is enriched from the transcript: text-only caption, triples, no visual embedding
    assert result.model_dump()["enriched"] is True and result.model_dump()["visualStored"] is False
    caption_request = scripted(svc).calls_for("caption")[0]
    assert isinstance(caption_request.messages[-1]["content"], str)
    assert "want some tea" in caption_request.prompt_text
    assert visual_of(svc).calls == []
    assert counts(db)["triples"] == 3


def test_ingest_window_audio_only_without_speech_is_complete_unenriched(settings, db, scripted_llm, tmp_path):
    svc = make_ingest_services(settings, db, scripted_llm, tmp_path, transcript="  ")
    put_window(svc.store, frames=0)
    result = ingest_window(svc, event(frame_count=0))
    assert result.model_dump() == {"status": "ok", "segmentId": segment_id_of(result), "enriched": False}


def test_ingest_window_frame_count_zero_lists_prefix_and_runs_full_window(svc, db):
    # GIVEN a retriggered event with frameCount 0 (unknown) but frames in the store
    put_window(svc.store, frames=8)
    result = ingest_window(svc, event(frame_count=0))
    # THEN the frames are discovered and the window is fully enriched
    assert result.model_dump()["visualStored"] is True
    assert visual_of(svc).calls == [8]


def test_ingest_window_already_processed_returns_segment_id_without_model_calls(svc, db):
    put_window(svc.store)
    first = ingest_window(svc, event())
    calls = len(svc.llm.calls)
    again = ingest_window(svc, event())
    assert again.model_dump() == {"status": "already_processed", "segment_id": segment_id_of(first)}
    assert len(svc.llm.calls) == calls
    assert counts(db)["triples"] == 3


def test_ingest_window_no_frames_is_skipped_and_writes_nothing(svc, db):
    # GIVEN frameCount > 0 but nothing in the window prefix
    result = ingest_window(svc, event(frame_count=16))
    assert result.model_dump() == {"status": "skipped", "reason": "no_frames"}
    assert window_segment(db) is None


def test_ingest_window_gpu_unavailable_raises_and_leaves_row_pending(settings, db, scripted_llm, tmp_path):
    # GIVEN the GPU is required and no worker can be found
    script_window_models(scripted_llm)
    svc = make_ingest_services(
        settings.model_copy(update={"ingest_requires_gpu": True}), db, scripted_llm, tmp_path
    )
    put_window(svc.store)
    # WHEN the window is ingested THEN GpuUnavailableError is raised before any model call
    with pytest.raises(GpuUnavailableError) as info:
        ingest_window(svc, event())
    assert info.value.sentinel == "none"
    seg = window_segment(db)
    assert seg is not None and seg.processing_status == ProcessingStatus.PENDING and seg.claim_token is None
    assert scripted_llm.calls == [] and transcriber_of(svc).calls == []


def test_ingest_window_gpu_sentinel_address_raises_gpu_unavailable(settings, db, scripted_llm, tmp_path):
    svc = make_ingest_services(
        settings.model_copy(update={"ingest_requires_gpu": True, "gpu_worker_url": "http://0.0.0.0:8000"}),
        db,
        scripted_llm,
        tmp_path,
    )
    put_window(svc.store)
    with pytest.raises(GpuUnavailableError):
        ingest_window(svc, event())


def test_ingest_window_gpu_present_proceeds_when_required(settings, db, scripted_llm, tmp_path):
    script_window_models(scripted_llm)
    svc = make_ingest_services(
        settings.model_copy(update={"ingest_requires_gpu": True, "gpu_worker_url": "http://10.0.0.5:8000"}),
        db,
        scripted_llm,
        tmp_path,
    )
    put_window(svc.store)
    assert ingest_window(svc, event()).model_dump()["enriched"] is True


def test_ingest_window_gpu_exception_reraises_and_marks_failed(svc, db):
    # GIVEN the model call fails mid-window
    put_window(svc.store)
    scripted(svc).queue("episodic_triples", [failing("gpu worker 500")])
    # WHEN ingested THEN the error is re-raised (OnFailure → DLQ) and the row is failed with the error
    with pytest.raises(RuntimeError, match="gpu worker 500"):
        ingest_window(svc, event())
    seg = window_segment(db)
    assert seg is not None and seg.processing_status == ProcessingStatus.FAILED
    assert "gpu worker 500" in (seg.error or "")
    # usage of the calls that did happen is still recorded
    with db.unit_of_work(USER) as session:
        assert {r.purpose for r in session.execute(select(LLMUsage)).scalars()} == {"caption", "ner"}


def test_ingest_window_retry_reuses_failed_row_and_replaces_its_triples(svc, db):
    # GIVEN a window that completed, then failed on a later run with its (stale) triples still there
    put_window(svc.store)
    first = ingest_window(svc, event())
    with db.unit_of_work(USER) as session:
        seg = window_segment(db)
        assert seg is not None
        session.execute(update(Triple).values(predicate="stale").where(Triple.segment_id == seg.id))
        session.execute(
            update(Segment).values(processing_status=ProcessingStatus.FAILED).where(Segment.id == seg.id)
        )
    # WHEN it is ingested again
    again = ingest_window(svc, event())
    # THEN the same row is reused, old triples are gone, one fresh set is stored
    assert again.model_dump()["segmentId"] == segment_id_of(first)
    with db.unit_of_work(USER) as session:
        predicates = sorted(session.execute(select(Triple.predicate)).scalars())
    assert predicates == ["holds", "stand in", "talk with"]
    assert counts(db)["visual"] == 1


def test_ingest_window_visual_failure_is_not_fatal(settings, db, scripted_llm, tmp_path):
    script_window_models(scripted_llm)
    svc = make_ingest_services(
        settings,
        db,
        scripted_llm,
        tmp_path,
        visual=StubVisualEncoder(settings.visual_embedding_dim, RuntimeError("encode boom")),
    )
    put_window(svc.store)
    result = ingest_window(svc, event())
    assert result.model_dump()["enriched"] is True and result.model_dump()["visualStored"] is False
    assert counts(db)["visual"] == 0


def test_ingest_window_legacy_session_audio_is_sliced_to_the_window(settings, db, scripted_llm, tmp_path):
    # GIVEN only a full-session audio.m4a whose transcript spans windows 0 and 1
    script_window_models(scripted_llm)
    svc = make_ingest_services(
        settings.model_copy(update={"enrich_audio_only": False}), db, scripted_llm, tmp_path
    )
    svc.__dict__["transcriber"] = StaticTranscriber(
        Transcript(
            "hello there. second window talk",
            [
                TranscriptSegment(1.0, 4.0, "hello there."),
                TranscriptSegment(31.0, 35.0, "second window talk"),
            ],
        )
    )
    put_window(svc.store, index=1, frames=0, audio=None)
    svc.store.put(f"sessions/{SESSION}/audio.m4a", b"m4a")
    svc.store.put(f"sessions/{SESSION}/window_1/.keep", b"")
    # WHEN window 1 is ingested (audio-only)
    ingest_window(svc, event(index=1, frame_count=0))
    # THEN its transcript is the slice of window 1 only
    seg = window_segment(db, index=1)
    assert seg is not None and seg.transcript == "second window talk"
    assert transcriber_of(svc).calls == ["audio.m4a"]


def test_ingest_window_session_created_at_fallback_is_logged(settings, db, scripted_llm, tmp_path, caplog):
    script_window_models(scripted_llm)
    svc = make_ingest_services(settings, db, scripted_llm, tmp_path)
    put_session(svc.store, created_at=None)  # the catalog names the owner but not the start
    put_window(svc.store, index=2)
    before = datetime.now(UTC)
    with caplog.at_level(logging.INFO):
        ingest_window(svc, event(index=2))
    seg = window_segment(db, index=2)
    assert seg is not None and seg.start_time >= before + timedelta(seconds=60)
    assert any(getattr(r, "step", None) == "session_created_at_fallback" for r in caplog.records)


def test_ingest_window_emits_spec_log_steps_with_fields(svc, caplog):
    put_window(svc.store)
    with caplog.at_level(logging.INFO):
        result = ingest_window(svc, event())
    steps = {r.step: r for r in caplog.records if hasattr(r, "step")}
    for key in (
        "invoked",
        "frames_loaded",
        "audio_loaded",
        "transcription_complete",
        "segment_created",
        "caption_generated",
        "ner_complete",
        "triples_extracted",
        "embedding_stored",
        "completed",
    ):
        assert key in steps, key
    assert steps["invoked"].frame_count == 20 and steps["invoked"].window_index == 0
    assert steps["completed"].segment_id == segment_id_of(result) and steps["completed"].triple_count == 3
    assert steps["caption_generated"].caption_preview == CAPTION[:80]


def test_ingest_window_lambda_handler_parses_event_and_returns_dict(svc):
    from handlers.events.ingest_window import lambda_handler

    put_window(svc.store)
    set_services(svc)
    try:
        out = lambda_handler(event().model_dump(), lambda_context())
        bad = lambda_handler({"sessionId": SESSION}, lambda_context())
    finally:
        set_services(None)
    assert out["status"] == "ok" and out["enriched"] is True
    assert bad == {"status": "skipped", "reason": "invalid_event"}


def test_ingest_window_after_session_end_the_last_window_closes_partial_summaries(svc, db):
    # GIVEN a session the capture API has ended after two windows
    svc.store.put(
        f"sessions/{SESSION}/metadata.json",
        b'{"userId": "user-a", "createdAt": "2026-11-01T09:00:00Z", "endedAt": "2026-11-01T09:01:00Z"}',
    )
    scripted(svc).script("merge_captions", {"summary": "Two windows in the kitchen."})
    for index in (0, 1):
        put_window(svc.store, index=index, frames=4)
    # WHEN the first window completes, the session still has a window in flight: nothing closes yet
    ingest_window(svc, event(0, 4))
    with db.unit_of_work(USER) as session:
        assert session.scalars(select(Segment).where(Segment.duration_seconds == 180)).all() == []
    # WHEN the last window completes
    ingest_window(svc, event(1, 4))
    # THEN the partial 3-minute summary of the ended session is produced from both windows
    with db.unit_of_work(USER) as session:
        summary = session.scalars(select(Segment).where(Segment.duration_seconds == 180)).one()
        children = session.scalars(select(Segment).where(Segment.parent_segment_id == summary.id)).all()
    assert summary.caption == "Two windows in the kitchen."
    assert summary.processing_status == ProcessingStatus.COMPLETE
    assert len(children) == 2


def test_ingest_window_before_session_end_leaves_partial_summaries_open(svc, db):
    scripted(svc).script("merge_captions", {"summary": "never"})
    for index in (0, 1):
        put_window(svc.store, index=index, frames=4)
        ingest_window(svc, event(index, 4))
    with db.unit_of_work(USER) as session:
        assert session.scalars(select(Segment).where(Segment.duration_seconds == 180)).all() == []
