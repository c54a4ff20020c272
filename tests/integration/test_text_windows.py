"""Text-window ingest on real PostgreSQL: pre-captioned windows become the same memory the live path builds."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from tests.support.harness import make_settings
from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase
from worldmm.db.models import Entity, MemoryType, ProcessingStatus, Segment, Triple
from worldmm.ingest.text_windows import TextWindow, ingest_text_windows
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services

pytestmark = pytest.mark.integration

USER = "user-text"
DAY = datetime(2025, 1, 6, 11, 0, tzinfo=UTC)
SCENES = [
    "I pick up the blue notebook from the shelf. Katrina hands me a pen.",
    "I put the blue notebook in the desk drawer. Alice uses a screwdriver on the hard drive rack.",
    "I walk to the kitchen and pour milk into a glass. Shure opens the fridge.",
    "Lucia arranges the flowers on the dining table. I take a photo of the flowers.",
]


def _windows(count: int, session_id: str = "DAY1") -> list[TextWindow]:
    return [
        TextWindow(
            session_id=session_id,
            window_index=n,
            start_time=DAY + timedelta(seconds=30 * n),
            end_time=DAY + timedelta(seconds=30 * n + 30),
            caption=SCENES[n % len(SCENES)],
            transcript=f"[11:{n // 2:02d}:05] Katrina: We should buy flowers for Earth Day." if n % 5 == 0 else "",
        )
        for n in range(count)
    ]


@pytest.fixture
def svc(pg: LocalDatabase, db: Database) -> Iterator[Services]:
    # No LLM is scripted: any model call would fail the test (spaCy extraction, extractive summaries).
    settings = make_settings(
        database_url=pg.app_url,
        database_admin_url=pg.admin_url,
        extraction_provider="spacy",
        summary_provider="extractive",
        text_ingest_chunk=8,
    )
    yield Services(settings, db=db, llm=ScriptedLLM(), embedder=HashEmbedder(settings.embedding_dim))


def _count(db: Database, *where: object, model: type = Segment) -> int:
    with db.unit_of_work(USER) as session:
        return int(session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


def test_text_windows_become_complete_segments_with_entities_triples_and_summaries(
    svc: Services, db: Database
) -> None:
    # GIVEN 22 pre-captioned windows (one 10 min block and a little more) / WHEN ingested
    ticks: list[int] = []
    report = ingest_text_windows(svc, USER, _windows(22), progress=ticks.append)
    # THEN every window is a complete, embedded segment with its caption and transcript
    assert (report.written, report.skipped, sum(ticks)) == (22, 0, 22)
    assert _count(db, Segment.duration_seconds == 30, Segment.processing_status == ProcessingStatus.COMPLETE) == 22
    assert _count(db, Segment.duration_seconds == 30, Segment.caption_embedding.is_not(None)) == 22
    assert _count(db, Segment.duration_seconds == 30, Segment.transcript.like("%Katrina: We should buy%")) == 5
    # AND entities (people and places, not things) are resolved once per surface form; a thing is a triple's
    # literal object
    assert _count(db, Entity.surface_form == "Katrina", model=Entity) == 1
    assert _count(db, Entity.surface_form == "blue notebook", model=Entity) == 0
    assert report.triples > 22
    assert _count(db, Triple.object_literal == "blue notebook", model=Triple)
    # AND the 3 min and 10 min summaries exist, complete, with triples, and semantic triples were consolidated
    assert _count(db, Segment.duration_seconds == 180, Segment.processing_status == ProcessingStatus.COMPLETE) == 4
    assert _count(db, Segment.duration_seconds == 600, Segment.processing_status == ProcessingStatus.COMPLETE) == 1
    with db.unit_of_work(USER) as session:
        ten = session.scalars(select(Segment).where(Segment.duration_seconds == 600)).one()
        assert "notebook" in (ten.caption or "")
        assert session.scalar(select(func.count()).select_from(Triple).where(Triple.segment_id == ten.id))
    assert _count(db, Triple.memory_type == MemoryType.SEMANTIC, model=Triple) > 0
    assert report.summaries >= 5


def test_text_windows_rerun_does_nothing_and_resume_finishes_the_rest(svc: Services, db: Database) -> None:
    # GIVEN the first 10 windows ingested (an interrupted run)
    windows = _windows(20)
    ingest_text_windows(svc, USER, windows[:10])
    triples_before = _count(db, Triple.memory_type == MemoryType.EPISODIC, model=Triple)
    # WHEN all 20 are ingested / THEN only the missing 10 are written
    report = ingest_text_windows(svc, USER, windows)
    assert (report.written, report.skipped) == (10, 10)
    assert _count(db, Segment.duration_seconds == 30) == 20
    assert _count(db, Segment.duration_seconds == 600, Segment.processing_status == ProcessingStatus.COMPLETE) == 1
    # WHEN run again / THEN nothing is written or produced
    snapshot = (
        _count(db, Triple.memory_type == MemoryType.EPISODIC, model=Triple),
        _count(db, model=Entity),
        _count(db),
    )
    again = ingest_text_windows(svc, USER, windows)
    assert (again.written, again.skipped, again.summaries) == (0, 20, 0)
    assert snapshot == (
        _count(db, Triple.memory_type == MemoryType.EPISODIC, model=Triple),
        _count(db, model=Entity),
        _count(db),
    )
    assert snapshot[0] > triples_before


def test_text_windows_complete_a_pending_row_left_by_the_live_path(svc: Services, db: Database) -> None:
    # GIVEN a window whose live ingest died after writing its pending row
    window = _windows(1)[0]
    with db.unit_of_work(USER) as session:
        session.add(
            Segment(
                user_id=USER,
                session_id=window.session_id,
                window_index=0,
                duration_seconds=30,
                start_time=window.start_time,
                end_time=window.end_time,
                processing_status=ProcessingStatus.PENDING,
            )
        )
    # WHEN ingested as text / THEN the same row is completed with its caption
    report = ingest_text_windows(svc, USER, [window])
    assert report.written == 1
    assert _count(db) == 1
    assert _count(db, Segment.processing_status == ProcessingStatus.COMPLETE, Segment.caption == window.caption) == 1


def test_text_window_times_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        TextWindow("s", 0, datetime(2025, 1, 6), datetime(2025, 1, 6, 0, 0, 30), "caption")
