"""The caption vector leg's plan: an exact scan of a small user's rows, the HNSW walk beyond; same ranking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.support.retrieval import MemoryWriter
from worldmm.db.queries import vector_literal
from worldmm.retrieval import hybrid
from worldmm.retrieval.hybrid import rank_segments
from worldmm.retrieval.timeref import TimeReference
from worldmm.services import Services

pytestmark = pytest.mark.integration

NOW = datetime(2026, 3, 21, 12, 0, tzinfo=UTC)
CAPTIONS = [
    "I watered the tomatoes in the greenhouse",
    "I answered emails at my desk",
    "Katrina and I cooked pasta with tomatoes",
    "I walked the dog along the river",
    "I repaired the bike's flat tyre",
    "tomato seedlings need more water",
]


def _dense(services: Services, query: str) -> list[str]:
    [embedding] = services.embedder.embed([query])
    with services.db.unit_of_work("u1") as session:
        rankings = rank_segments(services, session, "u1", query, embedding, TimeReference(until=NOW), [30], 4)
        texts = dict(
            session.execute(
                text("SELECT id, caption FROM worldmm_segments WHERE id = ANY(:ids)"), {"ids": rankings.dense}
            ).all()
        )
    return [texts[i] for i in rankings.dense]


@pytest.mark.parametrize("max_floats", [hybrid.EXACT_SCAN_MAX_FLOATS, 0])
def test_dense_ranking_is_the_exact_nearest_under_either_plan(
    services: Services, monkeypatch: pytest.MonkeyPatch, max_floats: int
) -> None:
    # GIVEN six captions of one user, and the plan forced (default: exact scan; 0: the HNSW walk)
    w = MemoryWriter(services, "u1")
    for n, caption in enumerate(CAPTIONS):
        w.segment(caption, start=NOW - timedelta(hours=n + 1))
    monkeypatch.setattr(hybrid, "EXACT_SCAN_MAX_FLOATS", max_floats)
    # WHEN the vector leg ranks them for a question
    found = _dense(services, "watering the tomatoes")
    # THEN it is the exact cosine order (computed here from the stored vectors)
    with services.db.unit_of_work("u1") as session:
        exact = [
            row[0]
            for row in session.execute(
                text(
                    "SELECT caption FROM worldmm_segments ORDER BY (caption_embedding <=> CAST(:e AS halfvec)) + 0, id "
                    "LIMIT 4"
                ),
                {"e": vector_literal(services.embedder.embed(["watering the tomatoes"])[0])},
            )
        ]
    assert found == exact


def test_candidate_rows_carry_the_stored_caption_vector(services: Services) -> None:
    # GIVEN a segment whose caption vector the embedder made
    w = MemoryWriter(services, "u1")
    segment = w.segment(CAPTIONS[0], start=NOW - timedelta(hours=1))
    [expected] = services.embedder.embed([CAPTIONS[0]])
    # WHEN the fusion step loads it (pgvector's binary form)
    with services.db.unit_of_work("u1") as session:
        [row] = hybrid.load_rows(session, "u1", [segment]).values()
    # THEN the vector is the stored one (half precision), as float32
    assert row.embedding is not None and row.embedding.dtype.name == "float32"
    assert row.embedding.tolist() == pytest.approx(expected, abs=1e-3)  # stored as halfvec: half precision


def test_the_exact_scan_is_chosen_only_for_a_small_share_of_the_table(services: Services, pg: Any) -> None:
    # GIVEN a table of 40 rows whose planner estimate is fresh (the owner runs ANALYZE)
    w = MemoryWriter(services, "u1")
    for n in range(40):
        w.segment(f"moment {n}", start=NOW - timedelta(minutes=n + 1), embed=False)
    engine = create_engine(pg.admin_url)
    with engine.connect() as conn:
        conn.execute(text("ANALYZE worldmm_segments"))
        conn.commit()
    engine.dispose()
    with services.db.unit_of_work("u1") as session:
        # THEN a user owning a small share is read exactly; one owning most of the index walks it
        assert hybrid._prefer_exact_scan(session, 4, 384)
        assert not hybrid._prefer_exact_scan(session, 36, 384)
        # AND past the size bound the walk is taken whatever the share
        assert not hybrid._prefer_exact_scan(session, 4, hybrid.EXACT_SCAN_MAX_FLOATS)
