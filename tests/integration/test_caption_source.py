"""A window's caption says where it came from (seen, tidied, heard), on the segment and in an answer's citations."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from tests.support.ingest import SESSION, USER, make_ingest_services, script_window_models
from worldmm.config import CaptionMode
from worldmm.db.models import LLMUsage, ProcessingStatus, Segment
from worldmm.ingest.enrichment import WindowMaterial, claim_segment, enrich_segment
from worldmm.retrieval.citations import cite
from worldmm.retrieval.models import MemoryKind, RetrievedMemory

pytestmark = pytest.mark.integration

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
HEARD = "Kate: want some tea?"


def _enrich(services, index: int, frames: list[bytes]) -> Segment:
    claim = claim_segment(
        services,
        user_id=USER,
        session_id=SESSION,
        window_index=index,
        duration_seconds=30,
        start_time=T0 + timedelta(seconds=30 * index),
        end_time=T0 + timedelta(seconds=30 * (index + 1)),
    )
    material = WindowMaterial(frames, [f"k{i}" for i in range(len(frames))], HEARD)
    enrich_segment(services, USER, claim.segment_id, material, claim_token=claim.claim_token)
    with services.db.unit_of_work(USER) as session:
        segment = session.get(Segment, claim.segment_id)
        assert segment is not None
        session.expunge(segment)
        return segment


@pytest.mark.parametrize(
    ("mode", "frames", "source", "caption"),
    [
        (CaptionMode.HEARD, [b"a", b"b"], "heard", f"I heard: {HEARD}"),  # the local profile: no model is asked
        (CaptionMode.SEEN, [b"a", b"b"], "seen", "I talk with Kate in the kitchen while she holds a red mug."),
        (CaptionMode.SEEN, [], "tidied", "I talk with Kate in the kitchen while she holds a red mug."),
    ],
)
def test_the_segment_records_where_its_caption_came_from(
    settings, db, scripted_llm, tmp_path, mode, frames, source, caption
) -> None:
    # GIVEN a captioner in `mode`
    script_window_models(scripted_llm)
    services = make_ingest_services(settings.model_copy(update={"caption_mode": mode}), db, scripted_llm, tmp_path)
    # WHEN a window is enriched
    segment = _enrich(services, 0, frames)
    # THEN its caption and the source of it are stored together, and only a model caption costs a call
    assert (segment.processing_status, segment.caption, segment.caption_source) == (
        ProcessingStatus.COMPLETE,
        caption,
        source,
    )
    with db.unit_of_work(USER) as session:
        purposes = session.scalars(select(LLMUsage.purpose)).all()
    assert ("caption" in purposes) == (mode != CaptionMode.HEARD)


def test_an_unusable_model_caption_is_stored_as_heard(settings, db, scripted_llm, tmp_path) -> None:
    script_window_models(scripted_llm, caption="<the description>")
    services = make_ingest_services(settings.model_copy(update={"caption_mode": "seen"}), db, scripted_llm, tmp_path)
    segment = _enrich(services, 0, [b"a"])
    assert (segment.caption, segment.caption_source) == (f"I heard: {HEARD}", "heard")


def test_citations_name_the_caption_source_and_a_summary_its_windows_sources(
    settings, db, scripted_llm, tmp_path
) -> None:
    # GIVEN a heard window, a seen window and a 1-minute summary over both
    script_window_models(scripted_llm)
    heard = _enrich(
        make_ingest_services(settings.model_copy(update={"caption_mode": "heard"}), db, scripted_llm, tmp_path),
        0,
        [b"a"],
    )
    services = make_ingest_services(settings.model_copy(update={"caption_mode": "seen"}), db, scripted_llm, tmp_path)
    seen = _enrich(services, 1, [b"a"])
    summary_id = uuid.uuid4()
    with db.unit_of_work(USER) as session:
        session.add(
            Segment(
                id=summary_id,
                user_id=USER,
                session_id=SESSION,
                window_index=0,
                duration_seconds=180,
                start_time=T0,
                end_time=T0 + timedelta(minutes=3),
                caption="I talk with Kate.",
                processing_status=ProcessingStatus.COMPLETE,
            )
        )
    memories = [
        RetrievedMemory(
            id=str(s.id),
            memory_type=MemoryKind.EPISODIC,
            text=s.caption or "",
            score=1.0,
            source="hybrid",
            start_time=s.start_time,
            end_time=s.end_time,
            duration_seconds=s.duration_seconds,
        )
        for s in (heard, seen)
    ]
    memories.append(memories[0].model_copy(update={"id": str(summary_id), "duration_seconds": 180}))
    # WHEN they are cited
    citations = cite(services, USER, memories)
    # THEN each window's citation says how its caption was made; the summary's, how its windows' were
    assert [c.caption_source for c in citations] == ["heard", "seen", "heard+seen"]
    # AND another user's citation of the same ids learns nothing
    assert [c.caption_source for c in cite(services, "someone-else", memories)] == [None, None, None]
