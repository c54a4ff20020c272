"""Every query of a user's data names the user, as well as row-level security holding it.

Two users hold the same kind of memory. The application's read and write paths (ingest with its summaries,
the hybrid, semantic, episodic and visual retrievers, the memories API, the chat store, retrigger, forget-me)
run for one of them on a `Database` connected as the **superuser**, for which row-level security does not
apply: whatever keeps users apart there is the application's own `user_id` predicate. Every statement they
send is recorded, and:

- no result names the other user's rows, and forget-me leaves every row of the other user in place;
- every SELECT, UPDATE or DELETE on a table with a `user_id` column has `user_id` in its WHERE clause, except
  the reaper's cross-user SECURITY DEFINER functions (maintenance reads keys only; see migration 0011).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, text

from tests.support.harness import truncate_all
from tests.support.ingest import make_ingest_services, put_session, put_window, script_window_models
from worldmm.chat.postgres import PostgresChatRepository
from worldmm.chat.settings import ChatSettings
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase
from worldmm.forget_user import forget_user
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM
from worldmm.retrieval.episodic_retriever import retrieve_episodic
from worldmm.retrieval.hybrid import hybrid_search
from worldmm.retrieval.semantic_retriever import retrieve_semantic
from worldmm.retrieval.visual_retriever import retrieve_visual
from worldmm.services import Services
from worldmm.timeline.models import MemoriesQuery

pytestmark = pytest.mark.integration

ALICE, BOB = "alice-scoping", "bob-scoping"
SESSIONS = {ALICE: "sess-alice", BOB: "sess-bob"}
WINDOWS = 6  # one 3-minute summary above them
CROSS_USER_BY_DESIGN = ("worldmm_stale_pending_windows", "worldmm_stale_summary_windows", "worldmm_claimed_windows")


def _tenant_tables(admin_url: str) -> set[str]:
    engine = create_engine(admin_url)
    try:
        with engine.connect() as conn:
            return set(
                conn.execute(
                    text(
                        "SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' "
                        "AND column_name = 'user_id'"
                    )
                ).scalars()
            )
    finally:
        engine.dispose()


def _orm_flush(sql: str) -> bool:
    """The ORM's write-back of an object by its primary key (`WHERE t.id = %(t_id)s`): the object was loaded in
    the same unit of work by a query that named the user (which this audit checks), so its key is the user's."""
    return re.search(r"^\s*(UPDATE|DELETE FROM) (\w+) .*WHERE \2\.id = %\(\2_id\)s(::UUID)?\s*$", sql, re.S) is not None


def unscoped(statements: list[str], tables: set[str]) -> list[str]:
    """The statements that read, change or delete a user table's rows without `user_id` in their WHERE."""
    found = []
    for sql in statements:
        verb = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if verb not in {"SELECT", "UPDATE", "DELETE", "WITH"} or any(f in sql for f in CROSS_USER_BY_DESIGN):
            continue
        named = {t for t in tables if re.search(rf'\b(FROM|JOIN|UPDATE)\s+"?{t}\b', sql, re.I)}
        if named and not _orm_flush(sql) and not re.search(r"\bWHERE\b.*\buser_id\b", sql, re.S | re.I):
            found.append(" ".join(sql.split()))
    return sorted(set(found))


@pytest.fixture
def superuser_world(
    pg: LocalDatabase, settings: Settings, scripted_llm: ScriptedLLM, tmp_path: Path
) -> Iterator[tuple[Services, list[str]]]:
    """Both users' memories, and Services whose database connection row-level security does not hold."""
    truncate_all(pg.admin_url)
    statements: list[str] = []
    database = Database(pg.admin_url)  # the superuser: what the application does not scope, leaks

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(database.engine, "before_cursor_execute", record)
    local = settings.model_copy(
        update={"capture_expected_frames": 4, "summary_provider": "extractive", "episodic_rerank": False}
    )
    services = make_ingest_services(local, database, script_window_models(scripted_llm), tmp_path / "objects")
    for user, sid in SESSIONS.items():
        put_session(services.store, sid, user_id=user)
        for index in range(WINDOWS):
            put_window(services.store, sid, index, frames=4)
            window = IngestWindowEvent(sessionId=sid, userId=user, windowIndex=index, frameCount=4)
            assert ingest_window(services, window).status == "ok"
    try:
        yield services, statements
    finally:
        event.remove(database.engine, "before_cursor_execute", record)
        truncate_all(pg.admin_url)


def _ids(admin_url: str, table: str, user: str) -> set[str]:
    engine = create_engine(admin_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text(f'SELECT id::text FROM "{table}" WHERE user_id = :u'), {"u": user})
            return set(rows.scalars())
    finally:
        engine.dispose()


def _segment_ids(admin_url: str, user: str) -> set[str]:
    return _ids(admin_url, "worldmm_segments", user)


def _rows_by_user(admin_url: str, tables: set[str]) -> dict[str, dict[str, int]]:
    engine = create_engine(admin_url)
    try:
        with engine.connect() as conn:
            return {
                t: dict(conn.execute(text(f'SELECT user_id, count(*) FROM "{t}" GROUP BY user_id')).all())  # type: ignore[arg-type]
                for t in sorted(tables)
            }
    finally:
        engine.dispose()


def test_security_every_user_query_is_scoped_by_user_id(
    superuser_world: tuple[Services, list[str]], pg: LocalDatabase
) -> None:
    services, statements = superuser_world
    tables = _tenant_tables(pg.admin_url)
    alice_segments = _segment_ids(pg.admin_url, ALICE)
    assert alice_segments and _segment_ids(pg.admin_url, BOB)
    now = datetime.now(UTC)
    question = "Where did Kate put the mug?"

    # Reads: whatever they return is Alice's
    hybrid = hybrid_search(services, ALICE, question, now=now)
    episodic = retrieve_episodic(services, ALICE, question, now=now)
    semantic = retrieve_semantic(services, ALICE, question, now=now)
    visual = retrieve_visual(services, ALICE, question, now=now)
    returned = {str(m.segment_id or m.id) for r in (hybrid, episodic, visual) for m in r.items}
    assert hybrid.items and returned <= alice_segments, (hybrid, episodic, visual)
    assert {m.id for m in semantic.items} <= _ids(pg.admin_url, "worldmm_triples", ALICE)
    page = services.memories.list_memories(ALICE, MemoriesQuery())
    assert page.memories and {m.id for m in page.memories} <= alice_segments
    detail = services.memories.get_memory(ALICE, page.memories[0].id)
    assert detail.id in alice_segments
    assert services.memories.session_status(ALICE, SESSIONS[ALICE]).session_id == SESSIONS[ALICE]

    # The chat store
    chats = PostgresChatRepository(ChatSettings.of(services.settings), services.db)
    bob_chat = chats.save_turn(BOB, None, "bob's question", "bob's answer")
    alice_chat = chats.save_turn(ALICE, None, "alice's question", "alice's answer")
    assert [c.id for c in chats.list_chats(ALICE).conversations] == [alice_chat]
    assert not chats.chat_owned_by(ALICE, bob_chat)

    # Writes: retrigger and forget-me touch Alice's rows only
    from worldmm.ingest.retrigger import reset_segments_to_pending

    reset_segments_to_pending(services, ALICE, SESSIONS[ALICE], [0])
    again = IngestWindowEvent(sessionId=SESSIONS[ALICE], userId=ALICE, windowIndex=0, frameCount=4)
    assert ingest_window(services, again).status == "ok"  # a re-run: claimed again, derivatives replaced
    bob_before = {t: users.get(BOB, 0) for t, users in _rows_by_user(pg.admin_url, tables).items()}
    forget_user(services, ALICE)
    after = _rows_by_user(pg.admin_url, tables)
    assert {t: users.get(BOB, 0) for t, users in after.items()} == bob_before
    assert all(not users.get(ALICE) for users in after.values())

    # And every statement sent named its user
    audited = [sql for sql in statements if re.search(r"\b(FROM|JOIN|UPDATE)\s+\"?worldmm_", sql)]
    print(f"{len(statements)} statements, {len(set(audited))} distinct on user tables")
    assert len(set(audited)) >= 30  # the audit saw the application's queries, not a handful
    missing = unscoped(statements, tables)
    assert missing == [], "\n".join(missing)
