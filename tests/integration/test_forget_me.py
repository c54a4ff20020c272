"""Issue 14 forget-me on every store with several users: PostgreSQL (real, application role), S3 with
versions, DynamoDB sessions / capture windows / chats / messages (moto), Redis (real). After forgetting one
user, every store is scanned: nothing of theirs, everything of the others unchanged; a second run finds
nothing; late windows are not re-created; the audit row holds no personal content; a user of the same id
who starts again never sees the erased memory through a warm cache."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.support.capture import create_capture_resources
from tests.support.ingest import StaticTranscriber, StubVisualEncoder, lambda_context, script_window_models
from worldmm.capture.dynamo import CaptureStore
from worldmm.capture.models import CaptureSession, UploadedObject, UploadKind
from worldmm.capture.service import CaptureService
from worldmm.chat.dynamo import DynamoChatRepository, dynamo_table_definitions
from worldmm.chat.settings import ChatSettings
from worldmm.config import Profile, Settings
from worldmm.db.engine import Database
from worldmm.db.models import MemoryType
from worldmm.db.queries.forget import FORGET_AUDIT_TABLE
from worldmm.forget_user import forget_user, user_hash
from worldmm.graph.build import GraphKey, UserGraph, graph_from_edges
from worldmm.graph.cache.local import LocalGraphCache
from worldmm.graph.cache.port import GENERATION_COUNTER_KEY, stored_generation
from worldmm.graph.cache.redis import RedisGraphCache
from worldmm.ingest.events import EventRejected, IngestWindowEvent, RetriggerEvent
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.ingest.retrigger import retrigger
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.objects import DirectoryObjectStore, S3ObjectStore
from worldmm.media.transcription.port import WEARER, Transcript, TranscriptSegment, Voice
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.memory.voices import remember_voices
from worldmm.retrieval.hybrid import hybrid_search
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

FORGOTTEN = "user-forget-me"
OTHERS = ("user-keep-1", "user-forget-me:episodic")  # the second shares the first's key prefix in Redis
USERS = (FORGOTTEN, *OTHERS)


@dataclass
class World:
    services: Services
    admin_url: str
    s3: Any
    dynamodb: Any
    redis: Any
    sessions: dict[str, str]


def _session_id(user: str) -> str:
    return "S" + hashlib.sha256(user.encode()).hexdigest()[:20]


def _graph(tag: int) -> UserGraph:
    a, b = (tag * 2 + 1).to_bytes(16, "big"), (tag * 2 + 2).to_bytes(16, "big")
    return graph_from_edges([a], [b], [tag.to_bytes(16, "big")], [b"s" * 16])


@pytest.fixture
def world(
    settings: Settings, db: Database, pg: Any, redis_url: str, redis_client: Any, aws: None, tmp_path: Path
) -> Iterator[World]:
    """Three users with a session, uploads (two versions each), an ingested window, chats and graph keys."""
    aws_settings = settings.model_copy(
        update={"worldmm_profile": Profile.AWS, "ingest_requires_gpu": False, "redis_url": redis_url}
    )
    s3, dynamodb = create_capture_resources(aws_settings)
    s3.put_bucket_versioning(Bucket=aws_settings.frames_bucket, VersioningConfiguration={"Status": "Enabled"})
    for definition in dynamo_table_definitions(ChatSettings.of(aws_settings)):
        dynamodb.create_table(**definition)
    capture = CaptureStore(aws_settings.sessions_table, aws_settings.capture_windows_table, client=dynamodb)
    services = Services(
        aws_settings,
        db=db,
        llm=script_window_models(ScriptedLLM()),
        embedder=HashEmbedder(aws_settings.embedding_dim),
        store=S3ObjectStore(aws_settings.frames_bucket, s3),
        transcriber=StaticTranscriber(Transcript("Kate: tea?", [TranscriptSegment(0.0, 5.0, "Kate: tea?")])),
        visual=StubVisualEncoder(aws_settings.visual_embedding_dim),
        invoker=InProcessInvoker(),
        chats=DynamoChatRepository(ChatSettings.of(aws_settings), dynamodb),
        graph_cache=RedisGraphCache.from_url(redis_url, aws_settings),
    )
    sessions = {}
    for n, user in enumerate(USERS):
        sid = _session_id(user)
        sessions[user] = sid
        capture.create_session(CaptureSession(session_id=sid, user_id=user, created_at="2026-05-01T10:00:00Z"))
        capture.record_open_upload(user, sid, 0, UploadKind.FRAME, 0, 1000.0)
        for version in range(2):  # a versioned bucket keeps both: forget-me must erase every version
            for f in range(4):
                s3.put_object(
                    Bucket=aws_settings.frames_bucket,
                    Key=f"sessions/{sid}/window_0/frame_{f:04d}.jpg",
                    Body=b"\xff\xd8" + f"{user}-{n}-{f}-{version}".encode(),
                )
        s3.put_object(Bucket=aws_settings.frames_bucket, Key=f"sessions/{sid}/window_0/audio.wav", Body=b"RIFF")
        result = ingest_window(services, IngestWindowEvent(sessionId=sid, userId=user, windowIndex=0, frameCount=4))
        assert result.status == "ok", result
        chat_id = services.chats.create_chat(user)
        services.chats.save_message(user, chat_id, "user", f"{user}: where is my mug?")
        services.chats.save_message(user, chat_id, "assistant", "On the kitchen counter.")
        services.graph_cache.get_or_build(GraphKey(user, MemoryType.SEMANTIC), lambda: _graph(1))
        hybrid_search(services, user, "where is my mug?")  # leaves the user's BM25 index snapshot in Redis
        assert redis_client.exists(f"worldmm:graph:{user}:lexical"), "no lexical snapshot to erase"
        start = datetime(2026, 5, 1, 10, tzinfo=UTC)
        voices = [Voice(WEARER, (1.0, 0.0), 60.0), Voice("Kate", (0.0, 1.0), 5.0)]
        assert remember_voices(db, user, sid, voices, start=start, end=start + timedelta(seconds=30)) == 2
    set_services(services)
    yield World(services, pg.admin_url, s3, dynamodb, redis_client, sessions)
    set_services(None)


# --- scanning every store -----------------------------------------------------------------------------


def postgres_rows(admin_url: str) -> dict[str, dict[str, int]]:
    """Rows per table per user, for every table with a user_id column (as the owner: past RLS)."""
    engine = create_engine(admin_url)
    found: dict[str, dict[str, int]] = {}
    with engine.connect() as conn:
        tables = (
            conn.execute(
                text(
                    "SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' "
                    "AND column_name = 'user_id'"
                )
            )
            .scalars()
            .all()
        )
        for table in tables:
            rows = conn.execute(text(f'SELECT user_id, count(*) FROM "{table}" GROUP BY user_id')).all()
            found[table] = {str(u): int(c) for u, c in rows}
    engine.dispose()
    return found


def s3_versions(world: World) -> list[str]:
    bucket = world.services.settings.frames_bucket
    versions: list[str] = []
    for page in world.s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        versions += [
            f"{v['Key']}@{v['VersionId']}" for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
        ]
    return sorted(versions)


def dynamo_items(world: World) -> dict[str, list[str]]:
    settings = world.services.settings
    tables = (settings.sessions_table, settings.capture_windows_table, settings.chats_table, settings.messages_table)
    return {t: sorted(json.dumps(i, sort_keys=True) for i in world.dynamodb.scan(TableName=t)["Items"]) for t in tables}


def redis_keys(world: World) -> list[str]:
    return sorted(k.decode() for k in world.redis.keys("*"))


def snapshot(world: World) -> dict[str, Any]:
    return {
        "postgres": postgres_rows(world.admin_url),
        "s3": s3_versions(world),
        "dynamodb": dynamo_items(world),
        "redis": redis_keys(world),
    }


def _item_is(item: str, user: str, session_id: str) -> bool:
    values = {v.get("S") for v in json.loads(item).values() if isinstance(v, dict)}
    return user in values or session_id in values


_GRAPH_REST = re.compile(r"^(semantic|episodic(:\d+)?|lexical)(:gen)?$")  # graphs, generations, BM25 snapshot


def _key_is(key: str, user: str) -> bool:
    prefix = f"worldmm:graph:{user}:"
    return key.startswith(prefix) and _GRAPH_REST.match(key[len(prefix) :]) is not None


def mentions(snap: dict[str, Any], user: str, session_id: str) -> list[str]:
    """Everything in a snapshot that belongs to `user` (by user id or by their session)."""
    found = [f"postgres {t}" for t, users in snap["postgres"].items() if users.get(user)]
    found += [v for v in snap["s3"] if v.startswith(f"sessions/{session_id}/")]
    found += [f"dynamodb {t}" for t, items in snap["dynamodb"].items() for i in items if _item_is(i, user, session_id)]
    found += [k for k in snap["redis"] if _key_is(k, user)]
    return found


def without(snap: dict[str, Any], user: str, session_id: str) -> dict[str, Any]:
    """The snapshot's part that is not `user`'s (what must not change)."""
    return {
        "postgres": {t: {u: c for u, c in users.items() if u != user} for t, users in snap["postgres"].items()},
        "s3": [v for v in snap["s3"] if not v.startswith(f"sessions/{session_id}/")],
        "dynamodb": {
            t: [i for i in items if not _item_is(i, user, session_id)] for t, items in snap["dynamodb"].items()
        },
        "redis": [k for k in snap["redis"] if not _key_is(k, user)],
    }


# --- the tests ----------------------------------------------------------------------------------------


def test_forget_me_erases_one_user_from_every_store_and_nothing_of_the_others(world: World) -> None:
    sid = world.sessions[FORGOTTEN]
    before = snapshot(world)
    # GIVEN every store holds the user's data (and the others')
    assert len(mentions(before, FORGOTTEN, sid)) >= 10
    for other in OTHERS:
        assert mentions(before, other, world.sessions[other])
    # WHEN the user is forgotten
    report = forget_user(world.services, FORGOTTEN, requested_by="ticket-1")
    after = snapshot(world)
    # THEN no store holds anything of theirs (and every cache key is known to be someone's: a new kind of key
    # that this scan cannot attribute fails here rather than escaping the erase unseen)
    assert [k for k in before["redis"] if k != GENERATION_COUNTER_KEY and not any(_key_is(k, u) for u in USERS)] == []
    assert report.complete and mentions(after, FORGOTTEN, sid) == []
    assert report.deleted["s3.objects"] == 4 * 2 + 1  # every version: 4 frames written twice, the audio once
    # AND everything of everyone else is exactly as it was
    assert without(after, FORGOTTEN, sid) == without(before, FORGOTTEN, sid)


def test_forget_me_is_idempotent_and_leaves_an_audit_record_without_personal_content(world: World) -> None:
    first = forget_user(world.services, FORGOTTEN, requested_by="ticket-1")
    middle = snapshot(world)
    second = forget_user(world.services, FORGOTTEN, requested_by="ticket-1")
    # THEN the second run finds nothing and changes nothing
    assert sum(first.deleted.values()) > 0 and sum(second.deleted.values()) == 0 and second.complete
    assert snapshot(world) == middle
    # AND two audit rows remain, naming the user only by a hash
    engine = create_engine(world.admin_url)
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(text(f"SELECT * FROM {FORGET_AUDIT_TABLE} ORDER BY id"))]
    engine.dispose()
    assert [r["user_hash"] for r in rows] == [user_hash(FORGOTTEN)] * 2 and all(r["complete"] for r in rows)
    assert all(FORGOTTEN not in json.dumps(r, default=str) and "mug" not in json.dumps(r, default=str) for r in rows)


def test_forget_me_late_windows_of_the_user_are_not_re_created(world: World) -> None:
    sid = world.sessions[FORGOTTEN]
    forget_user(world.services, FORGOTTEN)
    # WHEN a window of theirs arrives afterwards (an upload in flight, the sweeper's close, a DLQ retry)
    bucket = world.services.settings.frames_bucket
    world.s3.put_object(Bucket=bucket, Key=f"sessions/{sid}/window_1/frame_0000.jpg", Body=b"\xff\xd8late")
    late = ingest_window(
        world.services, IngestWindowEvent(sessionId=sid, userId=FORGOTTEN, windowIndex=1, frameCount=1)
    )
    with pytest.raises(EventRejected):
        retrigger(world.services, RetriggerEvent(sessionId=sid, userId=FORGOTTEN, force=True))
    capture = CaptureService(
        world.services.capture_settings,
        CaptureStore(
            world.services.settings.sessions_table, world.services.settings.capture_windows_table, client=world.dynamodb
        ),
        world.s3,
        world.services.invoker,
    )
    upload = capture.record_upload(UploadedObject(session_id=sid, window_index=1, kind=UploadKind.FRAME, frame_index=0))
    # THEN nothing is re-created: no segment, no window row, no invoke
    assert late.model_dump() == {"status": "skipped", "reason": "unknown_session"}
    assert upload.status == "ignored"
    snap = snapshot(world)
    assert [m for m in mentions(snap, FORGOTTEN, sid) if not m.startswith(f"sessions/{sid}/window_1/")] == []
    assert world.services.invoker.invocations == []  # type: ignore[attr-defined]


def test_forget_me_a_user_starting_again_never_gets_the_erased_graph_from_a_warm_cache(world: World) -> None:
    key = GraphKey(FORGOTTEN, MemoryType.SEMANTIC)
    # GIVEN warm processes holding the user's graph: one on Redis (after an invalidation), one in memory
    # revalidated against PostgreSQL's generation
    warm_redis = RedisGraphCache.from_url(world.services.settings.redis_url or "", world.services.settings)
    world.services.graph_cache.invalidate(FORGOTTEN, MemoryType.SEMANTIC)
    assert warm_redis.get_or_build(key, lambda: _graph(1)).edge_count == 1
    db = world.services.db
    epi = GraphKey(FORGOTTEN, MemoryType.EPISODIC, 30)
    warm_local = LocalGraphCache(generation=lambda k: stored_generation(db, k))
    old = warm_local.get_or_build(epi, lambda: _graph(1))
    assert stored_generation(db, epi) > 0
    # WHEN the user is forgotten and starts again: one new window, one new invalidation
    forget_user(world.services, FORGOTTEN)
    assert stored_generation(db, epi) == 0
    world.services.graph_cache.invalidate(FORGOTTEN, MemoryType.SEMANTIC)
    sid = world.sessions[FORGOTTEN]
    CaptureStore(
        world.services.settings.sessions_table, world.services.settings.capture_windows_table, client=world.dynamodb
    ).create_session(CaptureSession(session_id=sid + "b", user_id=FORGOTTEN, created_at="2026-06-01T10:00:00Z"))
    bucket = world.services.settings.frames_bucket
    for f in range(4):
        world.s3.put_object(Bucket=bucket, Key=f"sessions/{sid}b/window_0/frame_{f:04d}.jpg", Body=b"\xff\xd8new")
    again = ingest_window(
        world.services, IngestWindowEvent(sessionId=sid + "b", userId=FORGOTTEN, windowIndex=0, frameCount=4)
    )
    assert again.status == "ok"
    # THEN neither warm process serves the erased graph: both build afresh
    rebuilt: list[int] = []
    assert warm_redis.get_or_build(key, lambda: rebuilt.append(1) or _graph(2)) is not None
    assert warm_local.get_or_build(epi, lambda: rebuilt.append(2) or _graph(2)) is not old
    assert rebuilt == [1, 2]


def test_forget_me_local_profile_cli_erases_the_directory_and_postgres(
    settings: Settings, db: Database, pg: Any, tmp_path: Path
) -> None:
    from worldmm.cli import main

    # GIVEN the local profile: sessions in the objects directory (metadata.json names the owner), chats in PostgreSQL
    store = DirectoryObjectStore(tmp_path / "objects")
    llm = script_window_models(ScriptedLLM())
    services = Services(
        settings,
        db=db,
        llm=llm,
        embedder=HashEmbedder(settings.embedding_dim),
        store=store,
        transcriber=StaticTranscriber(Transcript("Kate: tea?", [TranscriptSegment(0.0, 5.0, "Kate: tea?")])),
        visual=StubVisualEncoder(settings.visual_embedding_dim),
        invoker=InProcessInvoker(),
    )
    for user in USERS:
        sid = _session_id(user)
        store.put(f"sessions/{sid}/metadata.json", json.dumps({"userId": user, "createdAt": 1_777_000_000}).encode())
        for f in range(4):
            store.put(f"sessions/{sid}/window_0/frame_{f:04d}.jpg", b"\xff\xd8" + user.encode())
        assert (
            ingest_window(services, IngestWindowEvent(sessionId=sid, userId=user, windowIndex=0, frameCount=4)).status
            == "ok"
        )
        services.chats.save_message(user, services.chats.create_chat(user), "user", "where is my mug?")
    before = postgres_rows(pg.admin_url)
    set_services(services)
    try:
        # WHEN an operator runs `worldmm forget --user-id U`
        assert main(["forget", "--user-id", FORGOTTEN, "--requested-by", "ticket-2"]) == 0
        assert main(["forget", "--user-id", "bad\x00id"]) == 2
    finally:
        set_services(None)
    # THEN the user's folder and rows are gone, the others' untouched
    after = postgres_rows(pg.admin_url)
    assert all(FORGOTTEN not in users for users in after.values())
    assert {t: {u: c for u, c in us.items() if u != FORGOTTEN} for t, us in before.items()} == after
    assert not (tmp_path / "objects" / "sessions" / _session_id(FORGOTTEN)).exists()
    for other in OTHERS:
        assert len(store.list(f"sessions/{_session_id(other)}/")) == 5


def test_forget_me_lambda_rejects_a_missing_or_malformed_user_id(world: World) -> None:
    from handlers.events.forget_user import lambda_handler

    for event in ({}, {"userId": ""}, {"userId": "x" * 200}, {"userId": "a\x00"}):
        assert lambda_handler(event, lambda_context())["statusCode"] == 400
    assert lambda_handler({"userId": FORGOTTEN}, lambda_context())["complete"] is True

