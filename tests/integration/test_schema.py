"""Schema: migrations, constraints, indexes, nearest-entity search, full text, ORM round trips, RLS."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import create_engine, inspect, select, text
from sqlalchemy.exc import IntegrityError

from tests.support.harness import TEST_EMBEDDING_DIM, make_settings
from worldmm.db import migrate
from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase
from worldmm.db.models import (
    MEMORY_TABLES,
    Chat,
    ChatMessage,
    Entity,
    LLMUsage,
    MemoryHistory,
    MemoryType,
    ProcessingStatus,
    Segment,
    Triple,
    VisualEmbedding,
)
from worldmm.db.queries import NEAREST_CANONICAL_SQL, nearest_canonical_entities

pytestmark = pytest.mark.integration

NOW = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _segment(user: str, window: int = 0, caption: str = "a caption", duration: int = 30) -> Segment:
    return Segment(
        user_id=user,
        session_id="s1",
        window_index=window,
        duration_seconds=duration,
        start_time=NOW + timedelta(seconds=30 * window),
        end_time=NOW + timedelta(seconds=30 * window + duration),
        caption=caption,
        processing_status=ProcessingStatus.COMPLETE,
    )


def _entity(
    user: str, name: str, vec: list[float] | None = None, canonical: uuid.UUID | None = None
) -> Entity:
    return Entity(
        user_id=user,
        surface_form=name,
        canonical_name=None if canonical else name,
        canonical_entity_id=canonical,
        embedding=vec,
    )


def test_migrations_create_every_table_and_index(pg: LocalDatabase) -> None:
    engine = create_engine(pg.admin_url)
    inspector = inspect(engine)
    tables = set(inspector.get_table_names())
    assert set(MEMORY_TABLES) <= tables
    with engine.connect() as conn:
        indexes = {
            row[0]: row[1]
            for row in conn.execute(
                text("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname='public'")
            )
        }
        versions = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname='vector'")).scalar()
        server = conn.execute(text("SHOW server_version_num")).scalar()
    engine.dispose()
    assert "hnsw" in indexes["ix_entities_embedding_hnsw"]
    assert "WHERE (canonical_entity_id IS NULL)" in indexes["ix_entities_embedding_hnsw"]
    assert "halfvec_cosine_ops" in indexes["ix_entities_embedding_hnsw"]
    assert "halfvec_cosine_ops" in indexes["ix_segments_caption_embedding"]
    # no query walks these (exact per-user scans): migration 0017 dropped them
    assert "ix_visual_embedding_hnsw" not in indexes and "ix_triples_embedding_hnsw" not in indexes
    assert "ix_segments_search" not in indexes  # BM25 reads search_tsv per user; no query matched it with @@
    assert "uq_segment_window" in indexes
    assert versions == "0.8.6"
    assert int(str(server)) >= 180000


def test_downgrade_then_upgrade_restores_the_schema(pg: LocalDatabase) -> None:
    settings = make_settings()
    migrate.downgrade(settings, admin_url=pg.admin_url)
    engine = create_engine(pg.admin_url)
    assert not set(MEMORY_TABLES) & set(inspect(engine).get_table_names())
    migrate.upgrade(settings, admin_url=pg.admin_url)
    # pooled application connections cached the dropped enum types' OIDs
    Database(pg.app_url).dispose()
    assert set(MEMORY_TABLES) <= set(inspect(engine).get_table_names())
    with engine.connect() as conn:
        dim = conn.execute(
            text(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid='worldmm_entities'::regclass AND attname='embedding'"
            )
        ).scalar()
    engine.dispose()
    assert dim == TEST_EMBEDDING_DIM


def test_triple_check_rejects_both_or_neither_object(db: Database) -> None:
    with db.unit_of_work("alice") as s:
        seg = _segment("alice")
        subj, obj = _entity("alice", "Kate"), _entity("alice", "kitchen")
        s.add_all([seg, subj, obj])
    for object_entity, literal in ((obj.id, "both"), (None, None)):
        with (
            pytest.raises(IntegrityError, match="ck_triple_exactly_one_object"),
            db.unit_of_work("alice") as s,
        ):
            s.add(
                Triple(
                    segment_id=seg.id,
                    user_id="alice",
                    memory_type=MemoryType.EPISODIC,
                    subject_entity_id=subj.id,
                    predicate="in",
                    object_entity_id=object_entity,
                    object_literal=literal,
                )
            )


def test_window_unique_key_rejects_a_duplicate(db: Database) -> None:
    with db.unit_of_work("alice") as s:
        s.add(_segment("alice", window=3))
    with pytest.raises(IntegrityError, match="uq_segment_window"), db.unit_of_work("alice") as s:
        s.add(_segment("alice", window=3))
    with db.unit_of_work("alice") as s:  # another scale of the same index is a different segment
        s.add(_segment("alice", window=3, duration=180))


def test_nearest_canonical_entities_are_exact_per_user(db: Database) -> None:
    rng = np.random.default_rng(7)
    expected: list[tuple[uuid.UUID, float]] = []
    query = rng.normal(size=TEST_EMBEDDING_DIM)
    query /= np.linalg.norm(query)
    for user in ("alice", "bob", "carol"):
        with db.unit_of_work(user) as s:
            for i in range(300):
                vec = rng.normal(size=TEST_EMBEDDING_DIM)
                vec /= np.linalg.norm(vec)
                canonical = _entity(user, f"{user}-entity-{i}", vec.tolist())
                s.add(canonical)
                s.flush()
                # an alias with the query's own vector must never be returned
                s.add(_entity(user, f"{user}-alias-{i}", query.tolist(), canonical=canonical.id))
                if user == "alice":
                    expected.append((canonical.id, float(1 - vec @ query)))
    expected.sort(key=lambda p: p[1])
    with db.unit_of_work("alice") as s:
        found = nearest_canonical_entities(s, "alice", query.tolist(), k=25)
        plan = "\n".join(
            r[0]
            for r in s.execute(
                text("EXPLAIN " + NEAREST_CANONICAL_SQL),
                {"user_id": "alice", "embedding": str(query.tolist()).replace(" ", ""), "k": 25},
            )
        )
    assert [e.id for e in found] == [e for e, _ in expected[:25]]
    # stored as halfvec (migration 0017): half precision, the distances within ~1e-3 of float32's
    assert all(abs(f.distance - d) < 2e-3 for f, (_, d) in zip(found, expected[:25], strict=True))
    assert "ix_entities_canonical_user" in plan or "Seq Scan" in plan  # exact scan of alice's canonical rows


def test_full_text_search_finds_a_segment_by_a_caption_word(db: Database) -> None:
    with db.unit_of_work("alice") as s:
        s.add(_segment("alice", 0, "Katrina pours coffee in the kitchen"))
        s.add(_segment("alice", 1, "Walking the dog in the park"))
        hits = s.scalars(
            select(Segment.caption).where(
                Segment.search_tsv.op("@@")(text("plainto_tsquery('english', 'dogs')"))
            )
        ).all()
    assert hits == ["Walking the dog in the park"]


def test_every_orm_model_round_trips(db: Database) -> None:
    with db.unit_of_work("alice") as s:
        seg = _segment("alice", caption="round trip")
        seg.caption_embedding = [0.5] * TEST_EMBEDDING_DIM
        ent = _entity("alice", "Kate", [0.1] * TEST_EMBEDDING_DIM)
        s.add_all([seg, ent])
        s.flush()
        triple = Triple(
            segment_id=seg.id,
            user_id="alice",
            memory_type=MemoryType.SEMANTIC,
            subject_entity_id=ent.id,
            predicate="drinks",
            object_literal="coffee",
            valid_at=NOW,
        )
        s.add(triple)
        s.flush()
        s.add_all(
            [
                VisualEmbedding(
                    segment_id=seg.id, user_id="alice", embedding=[0.2] * 8, timestamp=NOW, model="m"
                ),
                MemoryHistory(
                    user_id="alice",
                    triple_id=triple.id,
                    event="ADD",
                    mode="apply",
                    applied=True,
                    inputs={"new": ["Kate", "drinks", "coffee"]},
                    model="m",
                    reason="new fact",
                ),
                LLMUsage(user_id="alice", segment_id=seg.id, purpose="caption", model="m", prompt_tokens=10),
                Chat(chat_id="c1", user_id="alice", title="t", created_at=NOW, last_activity=NOW),
            ]
        )
        s.flush()
        s.add(
            ChatMessage(
                chat_id="c1", message_id="01J", user_id="alice", role="user", content="hi", created_at=NOW
            )
        )
    with db.unit_of_work("alice") as s:
        assert s.scalars(select(Segment)).one().caption == "round trip"
        assert np.allclose(s.scalars(select(Segment)).one().caption_embedding, 0.5)
        assert s.scalars(select(Triple)).one().object_literal == "coffee"
        assert s.scalars(select(VisualEmbedding)).one().model == "m"
        assert s.scalars(select(MemoryHistory)).one().inputs["new"][2] == "coffee"
        assert s.scalars(select(LLMUsage)).one().prompt_tokens == 10
        assert s.scalars(select(Chat)).one().title == "t"
        assert s.scalars(select(ChatMessage)).one().content == "hi"
        assert s.scalars(select(Entity)).one().canonical_name == "Kate"


def test_a_unit_of_work_sees_only_its_users_rows(db: Database) -> None:
    for user in ("alice", "bob"):
        with db.unit_of_work(user) as s:
            seg = _segment(user)
            ent = _entity(user, f"{user}-self")
            s.add_all([seg, ent])
            s.flush()
            s.add(
                Triple(
                    segment_id=seg.id,
                    user_id=user,
                    memory_type=MemoryType.EPISODIC,
                    subject_entity_id=ent.id,
                    predicate="is",
                    object_literal="here",
                )
            )
            s.add(Chat(chat_id=f"chat-{user}", user_id=user, created_at=NOW, last_activity=NOW))
    with db.unit_of_work("alice") as s:
        for table in MEMORY_TABLES:
            owners = set(s.execute(text(f"SELECT DISTINCT user_id FROM {table}")).scalars())
            assert owners <= {"alice"}, table
        assert s.execute(text("SELECT count(*) FROM worldmm_segments")).scalar() == 1
    with db.unit_of_work(None) as s:
        for table in MEMORY_TABLES:
            assert s.execute(text(f"SELECT count(*) FROM {table}")).scalar() == 0, table


def test_a_unit_of_work_cannot_write_rows_for_another_user(db: Database) -> None:
    with pytest.raises(Exception, match="row-level security"), db.unit_of_work("alice") as s:
        s.add(_segment("bob"))


def test_the_application_role_cannot_bypass_row_level_security(db: Database) -> None:
    with db.unit_of_work("alice") as s:
        row = s.execute(
            text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        ).one()
        assert tuple(row) == (False, False)
        with pytest.raises(Exception, match=r"permission denied|must be owner"):
            s.execute(text("ALTER TABLE worldmm_segments DISABLE ROW LEVEL SECURITY"))
