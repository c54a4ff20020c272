"""The enrichment contract shared with ingest_session and multiscale: claims, enrich, extract-and-store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from tests.support.ingest import SESSION, USER, counts, make_ingest_services, script_window_models
from worldmm.db.models import LLMUsage, ProcessingStatus, Segment, Triple
from worldmm.ingest.enrichment import (
    ClaimLostError,
    ClaimStatus,
    WindowMaterial,
    claim_segment,
    enrich_segment,
    extract_and_store_episodic,
)

pytestmark = pytest.mark.integration

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


class RecordingGraphCache:
    def __init__(self) -> None:
        self.invalidated: list[tuple[str, str, list[int] | None]] = []

    def invalidate(self, user_id: str, memory_type: Any, scales: Any = None) -> None:
        self.invalidated.append((user_id, str(memory_type), None if scales is None else list(scales)))


@pytest.fixture
def svc(settings, db, scripted_llm, tmp_path):
    script_window_models(scripted_llm)
    services = make_ingest_services(settings, db, scripted_llm, tmp_path)
    services.__dict__["graph_cache"] = RecordingGraphCache()
    return services


def claim(svc, index: int = 0):
    return claim_segment(
        svc,
        user_id=USER,
        session_id=SESSION,
        window_index=index,
        duration_seconds=30,
        start_time=T0,
        end_time=T0 + timedelta(seconds=30),
    )


def test_ingest_claim_segment_creates_pending_row_then_reports_busy(svc, db):
    first = claim(svc)
    assert first.status == ClaimStatus.CLAIMED and first.created and first.claim_token is not None
    second = claim(svc)
    assert second.status == ClaimStatus.BUSY and second.segment_id == first.segment_id


def test_ingest_claim_segment_takes_over_an_expired_claim(svc, db):
    first = claim(svc)
    with db.unit_of_work(USER) as session:
        session.execute(update(Segment).values(claimed_at=datetime.now(UTC) - timedelta(hours=1)))
    second = claim(svc)
    assert second.status == ClaimStatus.CLAIMED and second.retrying
    assert second.segment_id == first.segment_id and second.claim_token != first.claim_token
    assert second.start_time == T0  # the row's timestamps are reused


def test_ingest_enrich_segment_with_lost_claim_writes_nothing(svc, db):
    # GIVEN a claim that another invocation took over after it expired
    first = claim(svc)
    with db.unit_of_work(USER) as session:
        session.execute(update(Segment).values(claimed_at=datetime.now(UTC) - timedelta(hours=1)))
    claim(svc)
    # WHEN the first invocation tries to finish THEN it is refused and stores no triples
    with pytest.raises(ClaimLostError):
        enrich_segment(svc, USER, first.segment_id, WindowMaterial([b"f"], ["k"], "t"), claim_token=first.claim_token)
    assert counts(db)["triples"] == 0
    with db.unit_of_work(USER) as session:
        assert session.scalar(select(Segment.processing_status)) == ProcessingStatus.PENDING
        assert len(session.execute(select(LLMUsage)).all()) == 3  # its model calls are still accounted


def test_ingest_enrich_segment_completes_and_invalidates_episodic_graph(svc, db):
    c = claim(svc)
    result = enrich_segment(
        svc, USER, c.segment_id, WindowMaterial([b"a", b"b"], ["k1", "k2"], "hi"), claim_token=c.claim_token
    )
    assert (result.entity_count, result.triple_count, result.visual_stored) == (3, 3, True)
    assert svc.graph_cache.invalidated == [(USER, "episodic", [30])]  # only the 30 s graph changed


def test_ingest_enrich_segment_without_claim_replaces_earlier_results(svc, db):
    c = claim(svc)
    material = WindowMaterial([b"a"], ["k"], "")
    enrich_segment(svc, USER, c.segment_id, material)
    enrich_segment(svc, USER, c.segment_id, material)
    assert counts(db) == {"segments": 1, "entities": 3, "triples": 3, "visual": 1}


def test_ingest_extract_and_store_episodic_stores_summary_triples(svc, db):
    # GIVEN a 3-minute summary segment (as multiscale writes it)
    with db.unit_of_work(USER) as session:
        seg = Segment(
            user_id=USER,
            session_id=SESSION,
            window_index=0,
            duration_seconds=180,
            start_time=T0,
            end_time=T0 + timedelta(minutes=3),
            caption="I talk with Kate.",
        )
        session.add(seg)
    entities, triples = extract_and_store_episodic(svc, USER, seg.id, "I talk with Kate in the kitchen.")
    assert (entities, triples) == (3, 3)
    with db.unit_of_work(USER) as session:
        assert {t.segment_id for t in session.execute(select(Triple)).scalars()} == {seg.id}
        assert sorted(u.purpose for u in session.execute(select(LLMUsage)).scalars()) == [
            "episodic_triples",
            "ner",
        ]
    assert svc.graph_cache.invalidated == [(USER, "episodic", [180])]  # only the 3 min graph changed


def test_ingest_record_usage_writes_one_row_per_call(db):
    from worldmm.llm.port import LLMResponse
    from worldmm.llm.usage import record_usage

    with db.unit_of_work(USER) as session:
        record_usage(session, USER, None, "caption", LLMResponse("x", "gpt-5-mini", 120, 30, 812.5))
    with db.unit_of_work(USER) as session:
        row = session.execute(select(LLMUsage)).scalar_one()
    assert (row.purpose, row.model, row.prompt_tokens, row.completion_tokens, row.latency_ms) == (
        "caption",
        "gpt-5-mini",
        120,
        30,
        812.5,
    )
