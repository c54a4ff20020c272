"""A heard window's entities and facts come from its transcript's speaker lines (issue 62, items 2 and 3)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import aliased

from tests.support.ingest import SESSION, USER, make_ingest_services
from worldmm.db.models import Entity, Triple
from worldmm.ingest.enrichment import WindowMaterial, claim_segment, enrich_segment

pytestmark = pytest.mark.integration

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)
TRANSCRIPT = "Good morning. I am making breakfast in the kitchen.\nKatrina: I can't work at the bakery today."


Facts = set[tuple[str, str, str]]


def _facts_and_entities(settings, db, scripted_llm, tmp_path, **update: object) -> tuple[Facts, set[str]]:
    services = make_ingest_services(
        settings.model_copy(update={"extraction_provider": "spacy", "caption_mode": "heard", **update}),
        db, scripted_llm, tmp_path,
    )
    claim = claim_segment(
        services, user_id=USER, session_id=SESSION, window_index=0, duration_seconds=30,
        start_time=T0, end_time=T0 + timedelta(seconds=30),
    )
    enrich_segment(services, USER, claim.segment_id, WindowMaterial([], [], TRANSCRIPT), claim_token=claim.claim_token)
    subject, obj = aliased(Entity), aliased(Entity)
    with db.unit_of_work(USER) as session:
        rows = session.execute(
            select(subject.canonical_name, Triple.predicate, obj.canonical_name, Triple.object_literal)
            .join(subject, subject.id == Triple.subject_entity_id)
            .outerjoin(obj, obj.id == Triple.object_entity_id)
        ).all()
        names = set(session.scalars(select(Entity.canonical_name)))
    return {(s, p, o or literal) for s, p, o, literal in rows}, names


def test_a_heard_window_s_facts_are_about_each_line_s_speaker(settings, db, scripted_llm, tmp_path) -> None:
    # GIVEN a heard window whose transcript has the wearer's line and Katrina's / WHEN it is enriched
    facts, names = _facts_and_entities(settings, db, scripted_llm, tmp_path)
    # THEN Katrina's "I" is Katrina, the wearer's is the wearer, and only names (and the wearer) are entities
    assert ("Katrina", "not work at", "bakery") in facts, facts
    assert ("I", "make", "breakfast") in facts, facts
    assert not any(s == "I" and "work" in p for s, p, _ in facts), facts
    assert names == {"Katrina", "I"}


def test_without_speakers_told_apart_no_fact_is_kept_about_an_unknown_i(settings, db, scripted_llm, tmp_path) -> None:
    facts, names = _facts_and_entities(settings, db, scripted_llm, tmp_path, speaker_labels=False)
    assert facts == set() and "I" not in names
