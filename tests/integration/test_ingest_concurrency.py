"""Concurrent invocations of one window converge on one complete segment (database claims only)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select

from tests.support.ingest import (
    SESSION,
    USER,
    counts,
    make_ingest_services,
    put_session,
    put_window,
    script_window_models,
)
from worldmm.db.models import Entity, ProcessingStatus, Segment
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM

pytestmark = pytest.mark.integration


def test_ingest_window_twenty_concurrent_invocations_store_one_segment_and_one_triple_set(
    settings, db, tmp_path
):
    # GIVEN one window and a model with some latency, so invocations overlap
    llm = script_window_models(ScriptedLLM(latency_s=0.02))
    svc = make_ingest_services(settings, db, llm, tmp_path)
    put_session(svc.store)
    put_window(svc.store)
    event = IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=0, frameCount=20)
    # WHEN 20 threads ingest it at once
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = [
            f.result().model_dump() for f in [pool.submit(ingest_window, svc, event) for _ in range(20)]
        ]
    # THEN exactly one enriched it; the others saw it in progress or done
    enriched = [r for r in results if r["status"] == "ok"]
    assert len(enriched) == 1
    assert all(r["status"] in {"already_processed", "skipped"} for r in results if r["status"] != "ok")
    assert counts(db) == {"segments": 1, "entities": 3, "triples": 3, "visual": 1}
    with db.unit_of_work(USER) as session:
        assert session.scalar(select(Segment.processing_status)) == ProcessingStatus.COMPLETE
        surface = session.execute(select(func.lower(Entity.surface_form))).scalars().all()
    assert sorted(surface) == ["i", "kate", "kitchen"]
    assert len(llm.calls_for("caption")) == 1


def test_ingest_window_concurrent_windows_share_entities_without_duplicates(settings, db, tmp_path):
    # GIVEN 5 windows (fewer than 6: no summary due) naming the same entities, ingested concurrently
    llm = script_window_models(ScriptedLLM(latency_s=0.01))
    svc = make_ingest_services(settings, db, llm, tmp_path)
    put_session(svc.store)
    for i in range(5):
        put_window(svc.store, index=i, frames=4)
    events = [
        IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=i, frameCount=4) for i in range(5)
    ]
    with ThreadPoolExecutor(max_workers=5) as pool:
        results = list(pool.map(lambda e: ingest_window(svc, e).model_dump(), events))
    # THEN every window is complete and each surface form exists once
    assert all(r["status"] == "ok" for r in results)
    c = counts(db)
    assert c["segments"] == 5 and c["entities"] == 3 and c["triples"] == 15
