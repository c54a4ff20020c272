"""Embeddings are written in pgvector's binary format, and the database still guards what it stores."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pgvector import HalfVector
from sqlalchemy import event, select
from sqlalchemy.exc import DataError

from tests.support.harness import TEST_EMBEDDING_DIM
from worldmm.db.engine import Database
from worldmm.db.models import Segment

pytestmark = pytest.mark.integration

START = datetime(2026, 5, 1, 9, tzinfo=UTC)


def _segment(embedding: Any, window: int = 0) -> Segment:
    return Segment(
        user_id="u1",
        session_id="s1",
        window_index=window,
        duration_seconds=30,
        start_time=START,
        end_time=START + timedelta(seconds=30),
        caption="at the desk",
        caption_embedding=embedding,
    )


def test_vector_column_is_sent_as_a_binary_vector_and_reads_back_as_written(db: Database) -> None:
    # GIVEN a statement recorder on the engine
    sent: list[Any] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, _ctx: Any, _many: bool) -> None:
        if statement.startswith("INSERT INTO worldmm_segments"):
            sent.append(parameters)

    event.listen(db.engine, "before_cursor_execute", record)
    values = [(-1) ** i * (i + 0.5) / TEST_EMBEDDING_DIM for i in range(TEST_EMBEDDING_DIM)]
    try:
        # WHEN a segment with an embedding (a plain list) is written
        with db.unit_of_work("u1") as session:
            session.add(_segment(values))
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    # THEN the driver got a pgvector.HalfVector (dumped in binary, as the column's halfvec type), not a string
    [parameters] = sent
    assert isinstance(parameters["caption_embedding"], HalfVector)
    # AND the stored vector is the half-precision value of each element
    with db.unit_of_work("u1") as session:
        stored = session.scalar(select(Segment.caption_embedding))
    assert [float(v) for v in stored] == pytest.approx(values, rel=1e-3)


@pytest.mark.parametrize(
    "bad",
    [[0.1] * (TEST_EMBEDDING_DIM - 1), [math.nan] + [0.1] * (TEST_EMBEDDING_DIM - 1)],
    ids=["wrong-dimension", "nan"],
)
def test_vector_column_rejects_a_wrong_dimension_or_nan_and_writes_nothing(db: Database, bad: list[float]) -> None:
    with pytest.raises(DataError), db.unit_of_work("u1") as session:
        session.add(_segment(bad))
    with db.unit_of_work("u1") as session:
        assert session.scalar(select(Segment.id)) is None
