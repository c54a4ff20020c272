"""GET /memories, GET /memories/{id} and GET /sessions/{id} through the real Lambda handlers.

Memories are rows in the real test database (the application role, row-level security on); objects are in a
directory store or, for presigned media, moto's S3. Another user's token sees nothing of them: a memory or
session of someone else's reads as the same 403 as a missing one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from handlers.http.memories.get.app import lambda_handler as get_handler
from handlers.http.memories.list.app import lambda_handler as list_handler
from handlers.http.sessions.status.app import lambda_handler as status_handler
from tests.support.harness import make_settings
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.models import Entity, MemoryType, ProcessingStatus, Segment, Triple
from worldmm.gateway.events import LocalLambdaContext, build_event
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.objects import DirectoryObjectStore, ObjectStore, S3ObjectStore
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE = "user-alice"
BOB = "user-bob"
T0 = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
SESSION = "01JD3K8Z6Q9W2XYTB4C5N7M8PA"


def _invoke(handler: Any, path: str, user: str, query: dict[str, Any] | None = None, **params: str) -> Any:
    target = path + (f"?{urlencode(query)}" if query else "")
    claims = {"sub": user, "iss": "worldmm-local", "aud": "worldmm"}
    event = build_event("GET", target, {}, b"", claims, path_parameters=params or None)
    response = handler(event, LocalLambdaContext(function_name="test"))
    return response["statusCode"], json.loads(response["body"])


def list_memories(user: str, **query: Any) -> Any:
    return _invoke(list_handler, "/memories", user, query)


def get_memory(user: str, memory_id: str) -> Any:
    return _invoke(get_handler, f"/memories/{memory_id}", user, id=memory_id)


def session_status(user: str, session_id: str) -> Any:
    return _invoke(status_handler, f"/sessions/{session_id}", user, id=session_id)


def _segment(user: str, index: int, *, seconds: int = 30, session: str = SESSION, **fields: Any) -> Segment:
    start = T0 + timedelta(seconds=index * 30)
    values: dict[str, Any] = {
        "caption": f"window {index}",
        "caption_source": "heard",
        "processing_status": ProcessingStatus.COMPLETE,
    }
    values.update(fields)
    return Segment(
        user_id=user,
        session_id=session,
        window_index=index if seconds == 30 else index // (seconds // 30),
        duration_seconds=seconds,
        start_time=start,
        end_time=start + timedelta(seconds=seconds),
        **values,
    )


def _insert(db: Database, user: str, *rows: Any) -> None:
    with db.unit_of_work(user) as session:
        session.add_all(rows)


def _serve(settings: Settings, db: Database, llm: ScriptedLLM, store: ObjectStore) -> Services:
    services = Services(settings, db=db, llm=llm, embedder=HashEmbedder(settings.embedding_dim), store=store)
    set_services(services)
    return services


@pytest.fixture
def served(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    yield _serve(settings, db, scripted_llm, DirectoryObjectStore(tmp_path / "objects"))
    set_services(None)


@pytest.fixture
def timeline(served: Services) -> list[Segment]:
    """Alice: 12 windows (6 minutes) and two 3-min summaries; Bob: 3 windows at the same times."""
    windows = [_segment(ALICE, i) for i in range(12)]
    summaries = [
        _segment(ALICE, i, seconds=180, caption=f"summary {i // 6}", caption_source=source)
        for i, source in ((0, "written"), (6, "extractive"))
    ]
    _insert(served.db, ALICE, *windows, *summaries)
    _insert(served.db, BOB, *[_segment(BOB, i, caption=f"bob {i}") for i in range(3)])
    return windows + summaries


def test_timeline_lists_the_callers_memories_in_time_order_at_each_scale(timeline: list[Segment]) -> None:
    # WHEN Alice lists her windows, then her 3-min summaries, then everything in the first 90 s
    status, windows = list_memories(ALICE, scale=30)
    _, summaries = list_memories(ALICE, scale="180")
    _, span = list_memories(ALICE, **{"from": "2026-11-24T09:00:00Z", "to": "2026-11-24T09:01:30+00:00"})
    # THEN each is hers only, oldest first, with every field the app shows
    assert status == 200 and windows["next_cursor"] is None
    assert [m["caption"] for m in windows["memories"]] == [f"window {i}" for i in range(12)]
    first = windows["memories"][0]
    assert first["start_time"] == "2026-11-24T09:00:00.000000Z" and first["end_time"] == "2026-11-24T09:00:30.000000Z"
    assert (first["caption_source"], first["session_id"], first["status"]) == ("heard", SESSION, "complete")
    assert uuid.UUID(first["id"]) and first["duration_seconds"] == 30
    assert [m["caption"] for m in summaries["memories"]] == ["summary 0", "summary 1"]
    # AND a summary says whether a model wrote it or it is its windows' own lines
    assert [m["caption_source"] for m in summaries["memories"]] == ["written", "extractive"]
    # AND a span lists what overlaps it, summaries included, ordered by start then length
    assert [m["caption"] for m in span["memories"]] == ["window 0", "summary 0", "window 1", "window 2"]
    # AND a span from the first instant a time can name lists from the start (no bound overflows)
    assert list_memories(ALICE, scale=180, **{"from": "0001-01-01T00:00:00Z"}) == (200, summaries)
    # AND Bob's listing holds only his own
    _, bobs = list_memories(BOB)
    assert [m["caption"] for m in bobs["memories"]] == ["bob 0", "bob 1", "bob 2"]


def test_pages_follow_the_signed_cursor_and_a_cursor_works_only_for_its_own_listing(
    timeline: list[Segment],
) -> None:
    # WHEN Alice pages through every scale, 5 at a time
    seen: list[str] = []
    cursors: list[str] = []
    cursor = None
    pages = 0
    while True:
        query: dict[str, Any] = {"limit": 5, **({"cursor": cursor} if cursor else {})}
        status, page = list_memories(ALICE, **query)
        assert status == 200, page
        seen += [m["id"] for m in page["memories"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
        cursors.append(cursor)
    # THEN she saw all 14 memories once each, in the same order as one page gives them
    _, whole = list_memories(ALICE, limit=100)
    assert seen == [m["id"] for m in whole["memories"]] and len(set(seen)) == 14 and pages == 3
    first_cursor = cursors[0]
    # AND her cursor is refused for another filter, for Bob, and when edited
    assert list_memories(ALICE, scale=30, cursor=first_cursor)[0] == 400
    assert list_memories(BOB, limit=5, cursor=first_cursor) == (400, {"message": "invalid cursor"})
    # AND a filtered listing's next page needs only its cursor (it carries the span and scale)
    span = {"from": "2026-11-24T09:01:00Z", "to": "2026-11-24T09:05:00Z", "scale": 30, "limit": 3}
    _, first = list_memories(ALICE, **span)
    _, second = list_memories(ALICE, cursor=first["next_cursor"], limit=3)
    _, same = list_memories(ALICE, **{**span, "cursor": first["next_cursor"]})
    captions = [m["caption"] for m in first["memories"] + second["memories"]]
    assert captions == [f"window {i}" for i in range(2, 8)] and same == second
    assert list_memories(ALICE, cursor=first["next_cursor"], to="2026-11-24T10:00:00Z")[0] == 400
    body, _, mac = first_cursor.partition(".")
    assert list_memories(ALICE, limit=5, cursor=f"{body}.{mac[::-1]}")[0] == 400


@pytest.mark.parametrize(
    "query",
    [
        {"from": "yesterday"},
        {"to": "0.5"},  # never an epoch number
        {"from": "2026-11-24T09:00:00"},  # never a time without its offset
        {"scale": "45"},
        {"limit": "0"},
        {"cursor": "not-a-cursor"},
        {"to": "0001-01-01T00:00:00+01:00"},
    ],
)
def test_invalid_timeline_queries_are_400_with_a_message(served: Services, query: dict[str, str]) -> None:
    status, body = list_memories(ALICE, **query)
    assert status == 400 and body["message"], body


def test_one_memory_has_its_entities_and_facts_and_another_user_gets_403(
    timeline: list[Segment], served: Services
) -> None:
    # GIVEN a window of Alice's with two facts (one about an entity, one with a literal)
    window = timeline[3]
    with served.db.unit_of_work(ALICE) as session:
        marco = Entity(user_id=ALICE, surface_form="marco", canonical_name="Marco")
        keys = Entity(user_id=ALICE, surface_form="keys", canonical_name="keys")
        session.add_all([marco, keys])
        session.flush()
        session.add_all(
            [
                Triple(
                    segment_id=window.id,
                    user_id=ALICE,
                    memory_type=MemoryType.EPISODIC,
                    subject_entity_id=marco.id,
                    predicate="holds",
                    object_entity_id=keys.id,
                ),
                Triple(
                    segment_id=window.id,
                    user_id=ALICE,
                    memory_type=MemoryType.EPISODIC,
                    subject_entity_id=keys.id,
                    predicate="are on",
                    object_literal="the hall table",
                ),
            ]
        )
    # WHEN Alice reads it
    status, memory = get_memory(ALICE, str(window.id))
    # THEN it carries its caption, entities (canonical names) and facts; a window in a directory store has no URLs
    assert status == 200 and memory["caption"] == "window 3" and memory["media"] == []
    assert sorted(e["name"] for e in memory["entities"]) == ["Marco", "keys"]
    facts = {(t["subject"], t["predicate"], t["object"], t["valid"]) for t in memory["triples"]}
    assert facts == {("Marco", "holds", "keys", True), ("keys", "are on", "the hall table", True)}
    # AND Bob gets the same 403 for it as for an id that exists nowhere or is not an id
    forbidden = (403, {"message": "Forbidden"})
    assert get_memory(BOB, str(window.id)) == forbidden
    assert get_memory(ALICE, str(uuid.uuid4())) == forbidden
    assert get_memory(ALICE, "chat") == forbidden


def test_a_windows_frames_and_audio_come_as_short_lived_urls_when_the_store_is_s3(
    aws: None, settings: Settings, db: Database, scripted_llm: ScriptedLLM
) -> None:
    # GIVEN a window whose frames and audio are in S3
    import boto3

    boto3.client("s3").create_bucket(Bucket="frames")
    store = S3ObjectStore("frames")
    prefix = f"sessions/{SESSION}/window_0/"
    for name in ("frame_0000.jpg", "frame_0001.jpg", "audio.wav"):
        store.put(prefix + name, b"x")
    store.put(f"sessions/{SESSION}/window_1/frame_0000.jpg", b"other window")
    try:
        services = _serve(settings, db, scripted_llm, store)
        window = _segment(ALICE, 0, s3_frames_key=prefix)
        _insert(services.db, ALICE, window)
        # WHEN Alice reads the window
        status, memory = get_memory(ALICE, str(window.id))
    finally:
        set_services(None)
    # THEN each of its objects (and only its) has a GET URL for that key, expiring as configured
    assert status == 200
    assert sorted(m["name"] for m in memory["media"]) == ["audio.wav", "frame_0000.jpg", "frame_0001.jpg"]
    for media in memory["media"]:
        url = urlparse(media["url"])
        assert url.path.endswith(prefix + media["name"])
        assert media["expires_in_s"] == settings.memory_media_url_expiry_s
        assert parse_qs(url.query).get("X-Amz-Expires", parse_qs(url.query).get("Expires")), url.query


def _catalog(store: ObjectStore, user: str, session_id: str, window_count: int) -> None:
    doc = {"sessionId": session_id, "userId": user, "createdAt": T0.isoformat(), "windowCount": window_count}
    store.put(f"sessions/{session_id}/metadata.json", json.dumps(doc).encode())


def _status_windows(settings: Settings, db: Database, llm: ScriptedLLM, tmp_path: Path) -> Services:
    store = DirectoryObjectStore(tmp_path / "objects")
    services = _serve(settings, db, llm, store)
    _catalog(store, ALICE, SESSION, window_count=5)
    prefix = f"sessions/{SESSION}/window_"
    _insert(
        db,
        ALICE,
        _segment(ALICE, 0),
        _segment(ALICE, 1, processing_status=ProcessingStatus.FAILED, error="VLM timed out"),
        _segment(ALICE, 2, processing_status=ProcessingStatus.PENDING, s3_frames_key=f"{prefix}2/"),
        _segment(
            ALICE, 3, processing_status=ProcessingStatus.PENDING, s3_frames_key=f"{prefix}3/", claim_token=uuid.uuid4()
        ),
    )
    return services


def test_session_status_counts_each_windows_state(
    settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path
) -> None:
    # GIVEN Alice's session of 5 windows: complete, failed, pending (unclaimed), being ingested, not started
    _status_windows(settings, db, scripted_llm, tmp_path)
    try:
        # WHEN she asks for its status (the local profile: no GPU is needed)
        status, body = session_status(ALICE, SESSION)
    finally:
        set_services(None)
    # THEN each window has its state, and the counts add up
    assert status == 200, body
    assert [w["status"] for w in body["windows"]] == ["complete", "failed", "pending", "pending", "pending"]
    assert body["counts"] == {"pending": 3, "complete": 1, "failed": 1, "waiting_for_gpu": 0}
    assert body["windows"][4]["memory_id"] is None
    assert body["windows"][4]["start_time"] == "2026-11-24T09:02:00.000000Z"
    assert "VLM timed out" not in json.dumps(body)  # the internal error stays in the logs
    assert body["ended"] is False


def test_a_pending_window_waits_for_gpu_while_the_gpu_it_needs_is_down(
    db: Database, scripted_llm: ScriptedLLM, tmp_path: Path, pg: Any
) -> None:
    # GIVEN the same session where ingest needs a GPU and none is up
    settings = make_settings(database_url=pg.app_url, database_admin_url=pg.admin_url, ingest_requires_gpu=True)
    _status_windows(settings, db, scripted_llm, tmp_path)
    try:
        status, body = session_status(ALICE, SESSION)
    finally:
        set_services(None)
    # THEN the unclaimed pending window with frames waits for the GPU; the one being ingested does not
    assert status == 200
    assert [w["status"] for w in body["windows"]] == ["complete", "failed", "waiting_for_gpu", "pending", "pending"]
    assert body["counts"] == {"pending": 2, "complete": 1, "failed": 1, "waiting_for_gpu": 1}


def test_another_users_session_reads_as_a_missing_one(
    settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path
) -> None:
    # GIVEN Alice's session, and a session Bob never had
    services = _status_windows(settings, db, scripted_llm, tmp_path)
    _catalog(services.store, BOB, "01JD3K8Z6Q9W2XYTB4C5N7M8PB", window_count=1)
    try:
        # THEN Bob's token gets the same 403 for hers as for one that does not exist or is not an id
        forbidden = (403, {"message": "Forbidden"})
        assert session_status(BOB, SESSION) == forbidden
        assert session_status(BOB, "01JD3K8Z6Q9W2XYTB4C5N7M8PC") == forbidden
        assert session_status(BOB, "..") == forbidden
        # AND Alice gets 403 for Bob's
        assert session_status(ALICE, "01JD3K8Z6Q9W2XYTB4C5N7M8PB") == forbidden
    finally:
        set_services(None)
