"""Issue 63: vectors stored as halfvec, queries that cast to it and use the HNSW index, episodic triples
without a vector, vector indexes no query reads gone, and migration 0017 converting a 0016 database in place."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from tests.support.harness import TEST_EMBEDDING_DIM, TEST_VISUAL_DIM, make_settings
from tests.support.retrieval import BASE, MemoryWriter
from worldmm.db import migrate
from worldmm.db.local import LocalDatabase
from worldmm.db.models import MemoryType
from worldmm.db.queries import NEAREST_CANONICAL_SQL, vector_literal
from worldmm.db.queries.consolidation import CANDIDATES_SQL
from worldmm.db.queries.entities import NEAREST_FOR_EACH_SQL
from worldmm.db.queries.retrieval import NEAREST_VISUAL_SQL, SEMANTIC_SEED_SQL
from worldmm.db.queries.search import HNSW_SETTINGS_SQL, VECTOR_EXACT_SQL, VECTOR_SQL
from worldmm.services import Services

pytestmark = pytest.mark.integration

COLUMNS = {
    ("worldmm_segments", "caption_embedding"): TEST_EMBEDDING_DIM,
    ("worldmm_entities", "embedding"): TEST_EMBEDDING_DIM,
    ("worldmm_triples", "embedding"): TEST_EMBEDDING_DIM,
    ("worldmm_visual_embeddings", "embedding"): TEST_VISUAL_DIM,
}


def _types(url: str) -> dict[tuple[str, str], str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                    "JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = ANY(:tables) AND NOT a.attisdropped"
                ),
                {"tables": [t for t, _ in COLUMNS]},
            ).all()
    finally:
        engine.dispose()
    return {(t, c): kind for t, c, kind in rows if (t, c) in COLUMNS or c.endswith("_half")}


def test_every_vector_column_is_halfvec_of_its_dimension(pg: LocalDatabase) -> None:
    assert _types(pg.admin_url) == {key: f"halfvec({dim})" for key, dim in COLUMNS.items()}


def _plan(services: Services, sql: str, params: dict[str, Any], *settings: str) -> str:
    with services.db.unit_of_work("u1") as session:
        for setting in settings:
            session.execute(text(setting))
        return "\n".join(r[0] for r in session.execute(text("EXPLAIN " + sql), params))


def test_the_caption_vector_leg_walks_the_halfvec_hnsw_index(services: Services) -> None:
    # GIVEN caption vectors stored by the ORM (written as halfvec in binary)
    w = MemoryWriter(services, "u1")
    for n in range(40):
        w.segment(f"caption number {n} about the garden", start=BASE + timedelta(minutes=n))
    [query] = services.embedder.embed(["the garden"])
    params = {
        "embedding": vector_literal(query),
        "user_id": "u1",
        "durations": [30],
        "until": BASE + timedelta(days=1),
        "since": None,
        "pool": 10,
    }
    # WHEN the planner may not sort (as at 90 days, where walking the index is cheaper than sorting)
    no_sort = ("SET LOCAL enable_sort = off", "SET LOCAL enable_seqscan = off")
    plan = _plan(services, VECTOR_SQL, params, *no_sort)
    # THEN the query walks the halfvec HNSW index (halfvec <=> halfvec, halfvec_cosine_ops)
    assert "Index Scan using ix_segments_caption_embedding" in plan, plan
    assert "::halfvec" in plan
    # AND the ranking it returns is the exact cosine order over the stored vectors
    with services.db.unit_of_work("u1") as session:
        session.execute(text(HNSW_SETTINGS_SQL), {"ef": "100"})
        walked = [r.id for r in session.execute(text(VECTOR_SQL), params)]
        exact = [r.id for r in session.execute(text(VECTOR_EXACT_SQL), params)]
    assert walked == exact


def test_semantic_vector_queries_read_only_the_valid_semantic_index(services: Services) -> None:
    # GIVEN semantic facts and episodic triples of a user
    w = MemoryWriter(services, "u1")
    segment = w.segment("Kate drinks tea")
    for n in range(5):
        w.triple(segment, "Kate", f"likes {n}", literal="tea", memory_type=MemoryType.SEMANTIC)
        w.triple(segment, "Kate", f"drank {n}", literal="tea")
    [query] = services.embedder.embed(["what does Kate like"])
    params = {"embedding": vector_literal(query), "user_id": "u1", "k": 5, "until": BASE + timedelta(days=2)}
    # WHEN the semantic retriever's seed query and consolidation's candidates are planned
    seed = _plan(services, SEMANTIC_SEED_SQL, params, "SET LOCAL enable_seqscan = off")
    candidates = _plan(services, CANDIDATES_SQL, {**params, "threshold": 0.5}, "SET LOCAL enable_seqscan = off")
    # THEN both scan the user's valid semantic facts exactly (no triple HNSW index exists to walk)
    assert "ix_triples_valid_semantic" in seed, seed
    assert "ix_triples_valid_semantic" in candidates, candidates
    # AND both run with the halfvec cast
    with services.db.unit_of_work("u1") as session:
        assert len(session.execute(text(SEMANTIC_SEED_SQL), params).all()) == 5
        assert session.execute(text(CANDIDATES_SQL), {**params, "threshold": -1.0}).all()


def test_entity_and_visual_vector_queries_run_on_halfvec(services: Services) -> None:
    w = MemoryWriter(services, "u1")
    segment = w.segment("a red mug on the desk")
    w.entity("Kate")
    w.visual(segment, [1.0] + [0.0] * (TEST_VISUAL_DIM - 1))
    [query] = services.embedder.embed(["Kate"])
    with services.db.unit_of_work("u1") as session:
        [nearest] = session.execute(
            text(NEAREST_CANONICAL_SQL), {"embedding": vector_literal(query), "user_id": "u1", "k": 1}
        ).all()
        [each] = session.execute(
            text(NEAREST_FOR_EACH_SQL), {"forms": ["Kate"], "vectors": [vector_literal(query)], "user_id": "u1"}
        ).all()
        [visual] = session.execute(
            text(NEAREST_VISUAL_SQL),
            {
                "embedding": vector_literal([1.0] + [0.0] * (TEST_VISUAL_DIM - 1)),
                "user_id": "u1",
                "k": 1,
                "until": BASE + timedelta(days=1),
            },
        ).all()
    assert nearest.distance == pytest.approx(0.0, abs=2e-3) and each.distance == pytest.approx(0.0, abs=2e-3)
    assert visual.id == segment and visual.distance == pytest.approx(0.0, abs=1e-6)


def test_migration_0017_converts_a_0016_database_in_place(pg: LocalDatabase) -> None:
    # GIVEN a database at 0016 with float vectors: segments, entities, semantic and episodic triples, visuals
    server = create_engine(pg.admin_url, isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.execute(text("DROP DATABASE IF EXISTS mig0017 WITH (FORCE)"))
        conn.execute(text("CREATE DATABASE mig0017"))
    url = make_url(pg.admin_url).set(database="mig0017").render_as_string(hide_password=False)
    settings = make_settings()
    migrate.upgrade(settings, "0016", admin_url=url)
    assert set(_types(url).values()) == {f"vector({TEST_EMBEDDING_DIM})", f"vector({TEST_VISUAL_DIM})"}
    vec = "[" + ",".join(["0.1234567"] * TEST_EMBEDDING_DIM) + "]"
    engine = create_engine(url)
    with engine.begin() as conn:
        for i in range(7):
            conn.execute(
                text(
                    "INSERT INTO worldmm_segments (id, user_id, session_id, window_index, duration_seconds, start_time,"
                    " end_time, caption, caption_embedding) VALUES (gen_random_uuid(), 'u', 's', :i, 30, now(), now(),"
                    " 'c', CAST(:v AS vector))"
                ),
                {"i": i, "v": vec},
            )
        conn.execute(
            text(
                "INSERT INTO worldmm_entities (id, user_id, surface_form, canonical_name, embedding) "
                "VALUES (gen_random_uuid(), 'u', 'Kate', 'Kate', CAST(:v AS vector))"
            ),
            {"v": vec},
        )
        conn.execute(
            text(
                "INSERT INTO worldmm_triples (id, segment_id, user_id, memory_type, subject_entity_id, predicate,"
                " object_literal, embedding) SELECT gen_random_uuid(), s.id, 'u', CAST(k AS worldmm_memory_type),"
                " e.id, 'likes ' || s.window_index, 'tea', CAST(:v AS vector) FROM worldmm_segments s,"
                " worldmm_entities e, unnest(ARRAY['semantic', 'episodic']) AS k"
            ),
            {"v": vec},
        )
    # WHEN 0017 runs in batches of 3 rows
    migrate.upgrade(settings.model_copy(update={"migration_batch_rows": 3}), admin_url=url)
    # THEN every vector column is halfvec, the values kept to half precision, episodic triples' vectors gone
    assert _types(url) == {key: f"halfvec({dim})" for key, dim in COLUMNS.items()}
    with engine.connect() as conn:
        counts = conn.execute(
            text(
                "SELECT (SELECT count(*) FROM worldmm_segments WHERE caption_embedding IS NOT NULL),"
                " (SELECT count(*) FROM worldmm_triples WHERE memory_type = 'semantic' AND embedding IS NOT NULL),"
                " (SELECT count(*) FROM worldmm_triples WHERE memory_type = 'episodic' AND embedding IS NOT NULL),"
                " (SELECT max(abs(x - 0.1234567)) FROM worldmm_segments, unnest(CAST(CAST(caption_embedding AS"
                " vector) AS real[])) AS x)"
            )
        ).one()
        hnsw = dict(conn.execute(text("SELECT indexname, indexdef FROM pg_indexes WHERE indexdef LIKE '%hnsw%'")).all())
    assert counts[:3] == (7, 7, 0)
    assert counts[3] < 1e-3
    assert set(hnsw) == {"ix_segments_caption_embedding", "ix_entities_embedding_hnsw"}
    assert all("halfvec_cosine_ops" in d for d in hnsw.values())
    # AND it downgrades back to float vectors
    migrate.downgrade(settings, "0016", admin_url=url)
    assert set(_types(url).values()) == {f"vector({TEST_EMBEDDING_DIM})", f"vector({TEST_VISUAL_DIM})"}
    engine.dispose()
    with server.connect() as conn:
        conn.execute(text("DROP DATABASE mig0017 WITH (FORCE)"))
    server.dispose()


def _indexes(services: Services, table: str) -> dict[str, str]:
    with services.db.unit_of_work(None) as session:
        rows = session.execute(text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = :t"), {"t": table})
        return dict(rows.all())


def test_a_triple_is_unique_per_segment_type_subject_and_case_folded_fact(services: Services) -> None:
    # GIVEN migration 0021's hashed key and no separate segment index
    indexes = _indexes(services, "worldmm_triples")
    assert "md5(" in indexes["uq_triple_fact"] and "UNIQUE" in indexes["uq_triple_fact"]
    assert "uq_triple_in_segment" not in indexes and "ix_triples_segment" not in indexes
    w = MemoryWriter(services, "u1")
    segment = w.segment("Kate pours tea")
    w.triple(segment, "Kate", "pours", literal="tea")
    # WHEN the same fact is written again in other letter case, THEN the key refuses it
    with pytest.raises(IntegrityError, match="uq_triple_fact"):
        w.triple(segment, "Kate", "Pours", literal="TEA")
    # AND another object, another memory type, or the predicate and object split differently are other facts
    w.triple(segment, "Kate", "pours", literal="milk")
    w.triple(segment, "Kate", "pours", literal="tea", memory_type=MemoryType.SEMANTIC)
    w.triple(segment, "Kate", "pours tea", literal="")
    # AND the key leads with segment_id, so it serves a segment's lookups and cascade (the dropped index's job;
    # which index a query's plan picks among them depends on the table's statistics)
    assert "btree (segment_id, memory_type, subject_entity_id," in indexes["uq_triple_fact"]


def test_visual_vectors_are_stored_in_the_row(services: Services) -> None:
    # GIVEN a visual vector written after migration 0021
    w = MemoryWriter(services, "u1")
    w.visual(w.segment("a clip"), [0.5] * TEST_VISUAL_DIM)
    with services.db.unit_of_work(None) as session:
        storage = session.execute(
            text(
                "SELECT attstorage FROM pg_attribute WHERE attrelid = 'worldmm_visual_embeddings'::regclass "
                "AND attname = 'embedding'"
            )
        ).scalar()
    # THEN the column may compress but stays in the row (MAIN), not in TOAST chunks
    assert storage == "m"
