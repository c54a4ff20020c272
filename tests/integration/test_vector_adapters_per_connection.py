"""Every connection the engine makes can bind a pgvector value, whatever was imported before it opened."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.harness import TEST_EMBEDDING_DIM, TEST_VISUAL_DIM
from worldmm.db.engine import Database

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

# A fresh interpreter: the connection is opened (and kept by the pool) before the models module, which
# holds the vector columns, is imported; then every vector column is written through that one connection.
_CHILD = textwrap.dedent(
    """
    import json, sys, uuid
    from datetime import UTC, datetime, timedelta
    from sqlalchemy import text
    from worldmm.db.engine import Database

    db = Database(sys.argv[1])
    db.engine.pool.dispose()
    with db.unit_of_work(None) as session:
        session.execute(text("SELECT 1"))
    before = sorted(m for m in sys.modules if m.startswith("worldmm.db.") or m == "pgvector.psycopg")

    from worldmm.db.models import Entity, MemoryType, Segment, Triple, VisualEmbedding

    edim, vdim = int(sys.argv[2]), int(sys.argv[3])
    start = datetime(2026, 5, 1, 9, tzinfo=UTC)
    written = []
    with db.unit_of_work("u-adapt") as session:
        segment = Segment(
            user_id="u-adapt", session_id="s", window_index=0, duration_seconds=30, start_time=start,
            end_time=start + timedelta(seconds=30), caption="c", caption_embedding=[0.5] * edim,
        )
        entity = Entity(user_id="u-adapt", surface_form="mug", canonical_name="mug", embedding=[0.25] * edim)
        session.add_all([segment, entity])
        session.flush()
        session.add(Triple(
            segment_id=segment.id, user_id="u-adapt", memory_type=MemoryType.EPISODIC,
            subject_entity_id=entity.id, predicate="on", object_literal="desk", embedding=[0.125] * edim,
        ))
        session.add(VisualEmbedding(
            segment_id=segment.id, user_id="u-adapt", embedding=[0.75] * vdim, timestamp=start,
        ))
        written = ["segments.caption_embedding", "entities.embedding", "triples.embedding",
                   "visual_embeddings.embedding"]
    with db.unit_of_work("u-adapt") as session:
        stored = session.execute(text(
            "SELECT (SELECT count(*) FROM worldmm_segments WHERE caption_embedding IS NOT NULL),"
            " (SELECT count(*) FROM worldmm_entities WHERE embedding IS NOT NULL),"
            " (SELECT count(*) FROM worldmm_triples WHERE embedding IS NOT NULL),"
            " (SELECT count(*) FROM worldmm_visual_embeddings WHERE embedding IS NOT NULL)"
        )).one()
    connections = db.engine.pool.checkedin()
    print(json.dumps({"before": before, "written": written, "stored": list(stored), "pool": connections}))
    """
)


def test_a_connection_opened_before_the_models_import_writes_every_vector_column(db: Database) -> None:
    # GIVEN a fresh interpreter that opens its pooled connection before importing the vector columns
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, db.url, str(TEST_EMBEDDING_DIM), str(TEST_VISUAL_DIM)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    # THEN every vector column is written through that connection (no "cannot adapt type 'Vector'")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "worldmm.db.models" not in report["before"]
    assert report["stored"] == [1, 1, 1, 1]
    # AND it was the same pooled connection, opened before the import, that wrote them
    assert report["pool"] == 1
