"""Forget a span: DELETE /memories?from=&to=, DELETE /sessions/{id} and MCP forget_span.

Alice's session is 24 windows (12 minutes) ingested through the real window path (aws profile: moto S3 with
versions and DynamoDB, real PostgreSQL with row-level security, real Redis), so its 3 min and 10 min
summaries, triples, entities, visual embeddings, consolidation history, capture-window rows and graph and
lexical cache keys all exist. Each window's audio says a marker (`zq06` ...), which reaches its transcript,
caption, entities and triples. Erasing minutes 3-6 (windows 6-11) must leave no row, object version or cache
key that holds a marker or an id of the span, nothing of Bob's changed, and Alice's other windows intact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from sqlalchemy import create_engine, select, text

from handlers.http.memories.forget.app import lambda_handler as forget_span_handler
from handlers.http.memories.list.app import lambda_handler as list_handler
from handlers.http.sessions.forget.app import lambda_handler as forget_session_handler
from tests.support.capture import create_capture_resources
from tests.support.ingest import StubVisualEncoder
from tests.support.memory import script_memory_models
from worldmm.capture.dynamo import CaptureStore
from worldmm.capture.models import CaptureSession, UploadKind
from worldmm.chat.dynamo import DynamoChatRepository, dynamo_table_definitions
from worldmm.chat.settings import ChatSettings
from worldmm.config import Profile, Settings
from worldmm.db.engine import Database
from worldmm.db.models import ProcessingStatus, Segment, VoiceRow
from worldmm.gateway.confirm import ConfirmationCodes
from worldmm.gateway.events import LocalLambdaContext, build_event
from worldmm.gateway.mcp import forget_span as mcp_forget_span
from worldmm.graph.cache.redis import RedisGraphCache
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.ingest.summary_schedule import produce_summary
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.objects import S3ObjectStore
from worldmm.media.transcription.port import WEARER, Transcript, TranscriptSegment, Voice
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.memory.episodic.summary_tree import SlotKey
from worldmm.memory.voices import remember_voices
from worldmm.retrieval.hybrid import hybrid_search
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE, BOB = "user-span-alice", "user-span-bob"
SA, SA2, SB = "SPANALICE0000000000001", "SPANALICE0000000000002", "SPANBOB000000000000001"
T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
WINDOWS = 24
SPAN = range(6, 12)  # minutes 3-6: exactly the second 3 min summary's windows
FROM, TO = T0 + timedelta(minutes=3), T0 + timedelta(minutes=6)
_MARKER = re.compile(r"zq\d\d")


def marker(session_id: str, index: int) -> str:
    return {SA: "zq", SA2: "zy"}.get(session_id, "zx") + f"{index:02d}"


class MarkerTranscriber:
    """Hears what the audio chunk says: `RIFF-<marker>` → "Kate talks about the <marker> kettle"."""

    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript:
        said = f"Kate talks about the {audio.decode(errors='replace').removeprefix('RIFF-')} kettle"
        return Transcript(said, [TranscriptSegment(0.0, 5.0, said)])


def _caption(request: Any) -> dict[str, Any]:
    said = _MARKER.findall(request.prompt_text)[:1]
    return {"caption": f"I look at the {said[0]} kettle with Alice." if said else "I look around with Alice."}


def _ner(request: Any) -> dict[str, Any]:
    return {"entities": ["I", "Alice", *(f"thing {m}" for m in _MARKER.findall(request.prompt_text)[:1])]}


def _triples(request: Any) -> dict[str, Any]:
    things = [["I", "sees", f"thing {m}"] for m in _MARKER.findall(request.prompt_text)[:1]]
    return {"triples": [["I", "talks with", "Alice"], *things]}


@dataclass
class World:
    services: Services
    admin_url: str
    s3: Any
    dynamodb: Any
    redis: Any
    capture: CaptureStore


def _upload(world: World, user: str, session_id: str, index: int, *, versions: int = 1) -> None:
    bucket = world.services.settings.frames_bucket
    for version in range(versions):
        for f in range(2):
            world.s3.put_object(
                Bucket=bucket,
                Key=f"sessions/{session_id}/window_{index}/frame_{f:04d}.jpg",
                Body=b"\xff\xd8" + f"{marker(session_id, index)}-{f}-{version}".encode(),
            )
    world.s3.put_object(
        Bucket=bucket,
        Key=f"sessions/{session_id}/window_{index}/audio.wav",
        Body=f"RIFF-{marker(session_id, index)}".encode(),
    )
    world.capture.record_open_upload(user, session_id, index, UploadKind.FRAME, 0, 1000.0)


def _ingest(world: World, user: str, session_id: str, index: int) -> Any:
    return ingest_window(
        world.services, IngestWindowEvent(sessionId=session_id, userId=user, windowIndex=index, frameCount=2)
    )


@pytest.fixture
def world(
    settings: Settings, db: Database, pg: Any, redis_url: str, redis_client: Any, aws: None, tmp_path: Path
) -> Iterator[World]:
    aws_settings = settings.model_copy(
        update={"worldmm_profile": Profile.AWS, "ingest_requires_gpu": False, "redis_url": redis_url}
    )
    s3, dynamodb = create_capture_resources(aws_settings)
    s3.put_bucket_versioning(Bucket=aws_settings.frames_bucket, VersioningConfiguration={"Status": "Enabled"})
    for definition in dynamo_table_definitions(ChatSettings.of(aws_settings)):
        dynamodb.create_table(**definition)
    capture = CaptureStore(aws_settings.sessions_table, aws_settings.capture_windows_table, client=dynamodb)
    llm = script_memory_models(ScriptedLLM()).script("caption", _caption).script("ner", _ner)
    llm.script("episodic_triples", _triples)
    services = Services(
        aws_settings,
        db=db,
        llm=llm,
        embedder=HashEmbedder(aws_settings.embedding_dim),
        store=S3ObjectStore(aws_settings.frames_bucket, s3),
        transcriber=MarkerTranscriber(),
        visual=StubVisualEncoder(aws_settings.visual_embedding_dim),
        invoker=InProcessInvoker(),
        chats=DynamoChatRepository(ChatSettings.of(aws_settings), dynamodb),
        graph_cache=RedisGraphCache.from_url(redis_url, aws_settings),
    )
    world = World(services, pg.admin_url, s3, dynamodb, redis_client, capture)
    for user, sid, count in ((ALICE, SA, WINDOWS), (BOB, SB, 4)):
        capture.create_session(CaptureSession(session_id=sid, user_id=user, created_at=T0.isoformat()))
        for index in range(count):
            _upload(world, user, sid, index, versions=2 if index in SPAN else 1)
            assert _ingest(world, user, sid, index).status == "ok"
        chat_id = services.chats.create_chat(user)
        services.chats.save_message(user, chat_id, "user", "what did Kate talk about?")
        hybrid_search(services, user, "what did Kate talk about?")  # BM25 snapshot + graph keys in Redis
    set_services(services)
    yield world
    set_services(None)


# --- every store ------------------------------------------------------------------------------------------


def _call(handler: Any, method: str, path: str, user: str, query: dict[str, str] | None = None, **params: str) -> Any:
    target = path + (f"?{urlencode(query)}" if query else "")
    claims = {"sub": user, "iss": "worldmm-local", "aud": "worldmm"}
    event = build_event(method, target, {}, b"", claims, path_parameters=params or None)
    response = handler(event, LocalLambdaContext(function_name="test"))
    return response["statusCode"], json.loads(response["body"])


def delete_span(user: str, start: datetime = FROM, end: datetime = TO) -> Any:
    query = {"from": start.isoformat().replace("+00:00", "Z"), "to": end.isoformat().replace("+00:00", "Z")}
    return _call(forget_span_handler, "DELETE", "/memories", user, query)


def delete_session(user: str, session_id: str) -> Any:
    return _call(forget_session_handler, "DELETE", f"/sessions/{session_id}", user, id=session_id)


def span_ids(world: World, user: str = ALICE) -> set[str]:
    """Ids of `user`'s segments overlapping the span: its windows and the summaries over them."""
    with world.services.db.unit_of_work(user) as session:
        rows = session.scalars(
            select(Segment.id).where(Segment.user_id == user, Segment.start_time < TO, Segment.end_time > FROM)
        )
        return {str(r) for r in rows}


def postgres_mentions(admin_url: str, pattern: str) -> dict[str, int]:
    """Rows of every table of the schema (as the owner: past row-level security) whose text matches."""
    engine = create_engine(admin_url)
    found: dict[str, int] = {}
    with engine.connect() as conn:
        tables = (
            conn.execute(
                text(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
                )
            )
            .scalars()
            .all()
        )
        for table in tables:
            n = conn.execute(text(f'SELECT count(*) FROM "{table}" t WHERE t::text ~ :p'), {"p": pattern}).scalar()
            if n:
                found[table] = int(n)
    engine.dispose()
    return found


def postgres_counts(admin_url: str) -> dict[str, dict[str, int]]:
    engine = create_engine(admin_url)
    found: dict[str, dict[str, int]] = {}
    with engine.connect() as conn:
        tables = (
            conn.execute(
                text(
                    "SELECT table_name FROM information_schema.columns "
                    "WHERE table_schema = 'public' AND column_name = 'user_id'"
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
    found: list[str] = []
    for page in world.s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        found += [f"{v['Key']}@{v['VersionId']}" for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]]
    return sorted(found)


def s3_bodies(world: World) -> list[bytes]:
    bucket = world.services.settings.frames_bucket
    bodies = []
    for entry in s3_versions(world):
        key, version = entry.rsplit("@", 1)
        try:
            bodies.append(world.s3.get_object(Bucket=bucket, Key=key, VersionId=version)["Body"].read())
        except Exception:  # a delete marker has no body
            continue
    return bodies


def dynamo_items(world: World) -> dict[str, list[str]]:
    s = world.services.settings
    tables = (s.sessions_table, s.capture_windows_table, s.chats_table, s.messages_table)
    return {t: sorted(json.dumps(i, sort_keys=True) for i in world.dynamodb.scan(TableName=t)["Items"]) for t in tables}


def redis_keys(world: World) -> list[str]:
    return sorted(k.decode() for k in world.redis.keys("*"))


def snapshot(world: World) -> dict[str, Any]:
    return {
        "postgres": postgres_counts(world.admin_url),
        "s3": s3_versions(world),
        "dynamodb": dynamo_items(world),
        "redis": redis_keys(world),
    }


def _window_in_span(key: str) -> bool:
    return any(key.startswith(f"sessions/{SA}/window_{i}/") for i in SPAN)


def _bobs(snap: dict[str, Any]) -> dict[str, Any]:
    return {
        "postgres": {t: users.get(BOB, 0) for t, users in snap["postgres"].items()},
        "s3": [v for v in snap["s3"] if v.startswith(f"sessions/{SB}/")],
        "dynamodb": {t: [i for i in items if BOB in i or SB in i] for t, items in snap["dynamodb"].items()},
        "redis": [k for k in snap["redis"] if f":{BOB}:" in k],
    }


def _pattern(ids: set[str]) -> str:
    markers = "|".join(marker(SA, i) for i in SPAN)
    return "|".join([markers, *sorted(ids)])


# --- the tests -------------------------------------------------------------------------------------------


def test_forget_span_erases_the_span_from_every_store_and_nothing_else(world: World) -> None:
    ids = span_ids(world)
    before = snapshot(world)
    # GIVEN the span is everywhere: rows with its markers and ids, object versions, cache keys, buffer rows
    assert len(ids) == len(SPAN) + 2  # its 6 windows, the 3 min summary over them, the 10 min one over all
    found = postgres_mentions(world.admin_url, _pattern(ids))
    assert {"worldmm_segments", "worldmm_triples", "worldmm_entities", "worldmm_visual_embeddings"} <= set(found)
    assert len([v for v in before["s3"] if _window_in_span(v)]) == len(SPAN) * 5  # 2 frames x 2 versions + audio
    assert [k for k in before["redis"] if f":{ALICE}:" in k]
    with world.services.db.unit_of_work(ALICE) as session:
        semantic_before = session.execute(
            text("SELECT count(*) FROM worldmm_triples WHERE user_id = :u AND memory_type = 'semantic'"), {"u": ALICE}
        ).scalar()
    assert semantic_before  # the 10 min summary's semantic facts
    # WHEN Alice erases minutes 3-6
    status, body = delete_span(ALICE)
    after = snapshot(world)
    # THEN 200 with counts per store, and no store holds anything of the span
    assert status == 200, body
    assert body["start"] == "2026-05-01T10:03:00.000000Z" and body["end"] == "2026-05-01T10:06:00.000000Z"
    assert body["deleted"]["postgres.windows"] == len(SPAN) and body["deleted"]["objects"] == len(SPAN) * 5
    assert body["deleted"]["postgres.summaries"] == 1 and body["deleted"]["postgres.summaries_invalidated"] == 1
    # "thing zq06".."thing zq11" (the summary's semantic fact names "coffee" as a literal: no entity of it)
    assert body["deleted"]["postgres.entities"] == len(SPAN)
    # (the 10 min summary over the span stays, emptied: see below; its id is no content)
    [kept] = span_ids(world)
    assert postgres_mentions(world.admin_url, _pattern(ids - {kept})) == {}
    assert [v for v in after["s3"] if _window_in_span(v)] == []
    assert [b for b in s3_bodies(world) if any(marker(SA, i).encode() in b for i in SPAN)] == []
    assert [k for k in after["redis"] if f":{ALICE}:" in k] == []
    spans = {
        json.loads(i)["windowIndex"]["N"]
        for i in after["dynamodb"][world.services.settings.capture_windows_table]
        if SA in i
    }
    assert spans == {str(i) for i in range(WINDOWS) if i not in SPAN}
    # AND Bob's data is exactly as it was, and Alice's memories outside the span are all there
    assert _bobs(after) == _bobs(before)
    _, page = _call(list_handler, "GET", "/memories", ALICE, {"scale": "30"})
    assert [m["window_index"] for m in page["memories"]] == [i for i in range(WINDOWS) if i not in SPAN]
    assert postgres_mentions(world.admin_url, "zq05|zq12").get("worldmm_segments")
    # AND the 10 min summary over the span is emptied and failed (no caption), to be made again from the rest
    with world.services.db.unit_of_work(ALICE) as session:
        ten = session.scalars(select(Segment).where(Segment.user_id == ALICE, Segment.duration_seconds == 600)).one()
        threes = session.scalars(
            select(Segment.window_index).where(Segment.user_id == ALICE, Segment.duration_seconds == 180)
        ).all()
    assert (ten.processing_status, ten.caption, ten.caption_embedding) == (ProcessingStatus.FAILED, None, None)
    assert sorted(threes) == [0, 2]
    # AND the audit row holds counts, never content
    engine = create_engine(world.admin_url)
    with engine.connect() as conn:
        [audit] = [dict(r._mapping) for r in conn.execute(text("SELECT * FROM worldmm_forgotten_spans"))]
    engine.dispose()
    assert audit["complete"] and audit["deleted"] == body["deleted"] and audit["user_id"] == ALICE
    assert not _MARKER.search(json.dumps(audit, default=str)) and "kettle" not in json.dumps(audit, default=str)
    # AND the summary is made again from what remains (as the reaper's re-run does)
    outcome = produce_summary(world.services, ALICE, SA, SlotKey(600, 0), final=True)
    assert outcome.produced
    with world.services.db.unit_of_work(ALICE) as session:
        ten = session.scalars(select(Segment).where(Segment.user_id == ALICE, Segment.duration_seconds == 600)).one()
    assert ten.processing_status == ProcessingStatus.COMPLETE and ten.caption and str(ten.id) == kept
    assert postgres_mentions(world.admin_url, _pattern(ids - {kept})) == {}


def test_forget_span_is_idempotent(world: World) -> None:
    first = delete_span(ALICE)
    middle = snapshot(world)
    second = delete_span(ALICE)
    # THEN the second erase finds nothing and changes nothing but adding its own audit row
    assert first[0] == second[0] == 200 and sum(first[1]["deleted"].values()) > 0
    assert second[1]["deleted"] == {}
    after = snapshot(world)
    assert after["postgres"].pop("worldmm_forgotten_spans") == {ALICE: 2}
    middle["postgres"].pop("worldmm_forgotten_spans")
    assert after == middle


def test_forget_span_a_window_landing_after_the_erase_is_not_resurrected(world: World) -> None:
    assert delete_span(ALICE)[0] == 200
    ids = span_ids(world)
    # WHEN a window of the span lands afterwards (an upload in flight, a DLQ retry) and one after the span
    _upload(world, ALICE, SA, 8)
    late = _ingest(world, ALICE, SA, 8)
    _upload(world, ALICE, SA, WINDOWS)
    later = _ingest(world, ALICE, SA, WINDOWS)
    # THEN the one in the span is refused and its objects erased; the one after it is remembered
    assert late.model_dump() == {"status": "skipped", "reason": "forgotten"}
    assert later.status == "ok"
    assert [v for v in s3_versions(world) if _window_in_span(v)] == []
    assert span_ids(world) == ids  # only the emptied 10 min summary overlaps the span
    assert postgres_mentions(world.admin_url, "|".join(marker(SA, i) for i in SPAN)) == {}


def test_forget_span_while_a_window_of_it_is_being_ingested_writes_nothing(world: World) -> None:
    from worldmm.ingest.enrichment import ClaimLostError, WindowMaterial, claim_segment, enrich_segment

    # GIVEN window 30 of a span is claimed (being ingested) when the span is erased
    start = T0 + timedelta(minutes=15)
    claim = claim_segment(
        world.services,
        user_id=ALICE,
        session_id=SA,
        window_index=30,
        duration_seconds=30,
        start_time=start,
        end_time=start + timedelta(seconds=30),
    )
    assert claim.claimed
    assert delete_span(ALICE, start, start + timedelta(minutes=1))[1]["deleted"]["postgres.windows"] == 1
    # WHEN its ingest finishes, THEN nothing is written
    with pytest.raises(ClaimLostError):
        enrich_segment(
            world.services,
            ALICE,
            claim.segment_id,
            WindowMaterial(frames=[], frame_keys=[], transcript="Kate talks about the zq30 kettle"),
            claim_token=claim.claim_token,
        )
    assert postgres_mentions(world.admin_url, "zq30|" + str(claim.segment_id)) == {}


def test_forget_span_of_another_users_session_is_403_and_changes_nothing(world: World) -> None:
    before = snapshot(world)
    # WHEN Bob deletes Alice's session, a session that does not exist, and the same span of his own memory
    assert delete_session(BOB, SA) == (403, {"message": "Forbidden"})
    assert delete_session(BOB, "SPANNOBODY00000000001") == (403, {"message": "Forbidden"})
    status, body = delete_span(BOB)
    # THEN Alice's memory is untouched (Bob has nothing in the span)
    assert (status, body["deleted"]) == (200, {})
    after = snapshot(world)
    after["postgres"].pop("worldmm_forgotten_spans")
    before["postgres"].pop("worldmm_forgotten_spans")
    assert after == before


def test_forget_session_erases_the_whole_session_idempotently(world: World) -> None:
    world.capture.create_session(CaptureSession(session_id=SA2, user_id=ALICE, created_at=T0.isoformat()))
    for index in range(3):
        _upload(world, ALICE, SA2, index)
        assert _ingest(world, ALICE, SA2, index).status == "ok"
    before = snapshot(world)
    # WHEN Alice deletes the second session, twice
    status, body = delete_session(ALICE, SA2)
    again = delete_session(ALICE, SA2)
    # THEN every object version, row and buffer row of it is gone, and the first session is untouched
    assert status == 200 and body["session_id"] == SA2 and body["deleted"]["postgres.windows"] == 3
    assert again == (200, {"start": None, "end": None, "session_id": SA2, "deleted": {}})
    after = snapshot(world)
    assert [v for v in after["s3"] if v.startswith(f"sessions/{SA2}/")] == []
    assert [i for i in after["dynamodb"][world.services.settings.capture_windows_table] if SA2 in i] == []
    assert postgres_mentions(world.admin_url, "zy0[0-2]|" + SA2).keys() <= {"worldmm_forgotten_spans"}
    assert [v for v in after["s3"] if v.startswith(f"sessions/{SA}/")] == [
        v for v in before["s3"] if v.startswith(f"sessions/{SA}/")
    ]
    # AND a late window of it is refused and erased
    _upload(world, ALICE, SA2, 3)
    assert _ingest(world, ALICE, SA2, 3).model_dump() == {"status": "skipped", "reason": "forgotten"}
    assert [v for v in s3_versions(world) if v.startswith(f"sessions/{SA2}/")] == []


def _voices(world: World, user: str) -> dict[str, set[str]]:
    with world.services.db.unit_of_work(user) as session:
        rows = session.execute(select(VoiceRow.session_id, VoiceRow.name)).all()
    found: dict[str, set[str]] = {}
    for session_id, name in rows:
        found.setdefault(session_id, set()).add(name)
    return found


def test_forget_span_and_session_erase_the_voices_their_recordings_named(world: World) -> None:
    # GIVEN voices remembered from Alice's recording over the span, from her recording a day later, and Bob's
    voices = [Voice(WEARER, (1.0, 0.0), 60.0), Voice("Kate", (0.0, 1.0), 8.0)]
    day = timedelta(days=1)
    for user, session_id, start in ((ALICE, SA, T0), (ALICE, SA2, T0 + day), (BOB, SB, T0)):
        remember_voices(world.services.db, user, session_id, voices, start=start, end=start + timedelta(minutes=12))
    # WHEN Alice forgets three minutes of the first recording
    assert delete_span(ALICE)[0] == 200
    # THEN the voices that recording named are gone, and only those
    assert _voices(world, ALICE) == {SA2: {WEARER, "Kate"}}
    assert _voices(world, BOB) == {SB: {WEARER, "Kate"}}
    # AND forgetting the other session forgets its voices, and none is remembered for it again
    world.capture.create_session(CaptureSession(session_id=SA2, user_id=ALICE, created_at=(T0 + day).isoformat()))
    assert delete_session(ALICE, SA2)[0] == 200
    assert _voices(world, ALICE) == {}
    kept = remember_voices(world.services.db, ALICE, SA2, voices, start=T0 + day, end=T0 + day + timedelta(minutes=1))
    assert (kept, _voices(world, ALICE)) == (0, {})
    assert _voices(world, BOB) == {SB: {WEARER, "Kate"}}


@pytest.mark.parametrize(
    "query",
    [
        {"from": "2026-05-01T10:03:00Z"},
        {"from": "2026-05-01T10:06:00Z", "to": "2026-05-01T10:03:00Z"},
        {"from": "2026-05-01T10:03:00Z", "to": "2026-05-01T10:03:00Z"},
        {"from": "0.5", "to": "2026-05-01T10:03:00Z"},
        {"from": "2026-05-01T10:03:00", "to": "2026-05-01T10:06:00"},
    ],
)
def test_forget_span_bad_spans_are_400_and_erase_nothing(world: World, query: dict[str, str]) -> None:
    before = snapshot(world)
    status, body = _call(forget_span_handler, "DELETE", "/memories", ALICE, query)
    assert status == 400 and body["message"]
    assert snapshot(world) == before


class RecordingChannel:
    def __init__(self) -> None:
        self.shown: list[tuple[str, str, str]] = []

    def show(self, user_id: str, action: str, code: str, ttl_s: int) -> None:
        self.shown.append((user_id, action, code))


def test_mcp_forget_span_erases_only_with_the_code_shown_to_the_human_for_that_span(world: World) -> None:
    channel = RecordingChannel()
    codes = ConfirmationCodes(channel)
    before = snapshot(world)
    # WHEN the model calls forget_span without a code, with a made-up one, or where no channel exists
    asked = mcp_forget_span(world.services, ALICE, FROM, TO, None, None, codes)
    guessed = mcp_forget_span(world.services, ALICE, FROM, TO, None, "AAAA2222", codes)
    unchannelled = mcp_forget_span(world.services, ALICE, FROM, TO, None, "AAAA2222", None)
    # THEN nothing is erased; the code went to the human's channel, for exactly this span
    assert not (asked.accepted or guessed.accepted or unchannelled.accepted)
    assert snapshot(world) == before
    [(user, action, code)] = channel.shown
    assert user == ALICE and "2026-05-01T10:03:00+00:00" in action and code not in asked.message
    # AND the code does not confirm another span; it confirms this one, once
    codes.issue(ALICE, action)
    code = channel.shown[-1][2]
    wider = mcp_forget_span(world.services, ALICE, T0, TO, None, code, codes)
    assert not wider.accepted and snapshot(world) == before
    codes.issue(ALICE, action)
    code = channel.shown[-1][2]
    done = mcp_forget_span(world.services, ALICE, FROM, TO, None, code, codes)
    assert done.accepted and done.deleted["postgres.windows"] == len(SPAN)
    assert not mcp_forget_span(world.services, ALICE, FROM, TO, None, code, codes).accepted
    assert postgres_mentions(world.admin_url, "|".join(marker(SA, i) for i in SPAN)) == {}


def test_forget_span_reaching_into_the_future_forgets_only_what_was_recorded(world: World) -> None:
    # GIVEN a session started a minute ago (window 1 is being recorded now, window 4 is still to come)
    now = datetime.now(UTC)
    sid = "SPANALICE0000000000003"
    world.capture.create_session(
        CaptureSession(session_id=sid, user_id=ALICE, created_at=(now - timedelta(seconds=60)).isoformat())
    )
    # WHEN Alice erases the last hour and the next one
    status, _ = delete_span(ALICE, now - timedelta(hours=1), now + timedelta(hours=1))
    # THEN the window recorded now is refused when it lands, and one recorded after the erase is remembered
    assert status == 200
    _upload(world, ALICE, sid, 1)
    _upload(world, ALICE, sid, 4)
    assert _ingest(world, ALICE, sid, 1).model_dump() == {"status": "skipped", "reason": "forgotten"}
    assert _ingest(world, ALICE, sid, 4).status == "ok"


def test_forget_session_local_profile_keeps_only_the_catalog_entry(
    settings: Settings, db: Database, tmp_path: Path
) -> None:
    from tests.support.ingest import SESSION, USER, make_ingest_services, put_window, script_window_models

    # GIVEN the local profile: the session's folder holds its metadata.json and two ingested windows
    services = make_ingest_services(settings, db, script_window_models(ScriptedLLM()), tmp_path / "objects")
    set_services(services)
    try:
        for index in range(2):
            put_window(services.store, SESSION, index, frames=3)
            event = IngestWindowEvent(sessionId=SESSION, userId=USER, windowIndex=index, frameCount=3)
            assert ingest_window(services, event).status == "ok"
        # WHEN the user deletes the session, twice, and another user tries
        status, body = delete_session(USER, SESSION)
        again = delete_session(USER, SESSION)
        stranger = delete_session(BOB, SESSION)
    finally:
        set_services(None)
    # THEN only the catalog entry is left, no row of the session remains, and the second call finds nothing
    assert status == 200 and body["deleted"]["objects"] == 2 * 4 and body["deleted"]["postgres.windows"] == 2
    assert services.store.list(f"sessions/{SESSION}/") == [f"sessions/{SESSION}/metadata.json"]
    assert again == (200, {"start": None, "end": None, "session_id": SESSION, "deleted": {}})
    assert stranger == (403, {"message": "Forbidden"})
    with services.db.unit_of_work(USER) as session:
        assert session.scalars(select(Segment.id).where(Segment.user_id == USER)).all() == []


def test_forget_span_a_fact_only_the_span_had_invalidated_is_valid_again(world: World) -> None:
    # GIVEN a semantic fact of window 2 that window 8 (in the span) had invalidated
    with world.services.db.unit_of_work(ALICE) as session:
        by_index = dict(
            session.execute(
                select(Segment.window_index, Segment.id).where(
                    Segment.user_id == ALICE, Segment.session_id == SA, Segment.duration_seconds == 30
                )
            ).all()
        )
        me = session.execute(
            text("SELECT id FROM worldmm_entities WHERE user_id = :u AND surface_form = 'I'"), {"u": ALICE}
        ).scalar_one()
        fact = session.execute(
            text(
                "INSERT INTO worldmm_triples (id, segment_id, user_id, memory_type, subject_entity_id, predicate, "
                "object_literal, invalidated_at, invalidated_by_segment_id) VALUES (gen_random_uuid(), :seg, :u, "
                "'semantic', :me, 'lives in', 'Lisbon', now(), :by) RETURNING id"
            ),
            {"seg": by_index[2], "u": ALICE, "me": me, "by": by_index[8]},
        ).scalar_one()
    # WHEN the span is erased
    status, body = delete_span(ALICE)
    # THEN the fact is valid again (the evidence against it is gone)
    assert status == 200 and body["deleted"]["postgres.semantic_restored"] == 1
    with world.services.db.unit_of_work(ALICE) as session:
        row = session.execute(
            text("SELECT invalidated_at, invalidated_by_segment_id FROM worldmm_triples WHERE id = :id"), {"id": fact}
        ).one()
    assert tuple(row) == (None, None)


def test_forget_span_the_reaper_re_summarises_an_emptied_summary_from_what_remains(world: World) -> None:
    from worldmm.ingest.reaper import reap
    from worldmm.services import local_handlers

    # GIVEN the span is erased, leaving the 10 min summary over it emptied and failed, and some time passes
    assert delete_span(ALICE)[0] == 200
    with world.services.db.unit_of_work(ALICE) as session:
        session.execute(
            text(
                "UPDATE worldmm_segments SET updated_at = now() - interval '2 hours' "
                "WHERE user_id = :u AND duration_seconds = 600"
            ),
            {"u": ALICE},
        )
    name = world.services.settings.ingest_function_name
    world.services.invoker.register(name, local_handlers(world.services)[name])  # type: ignore[attr-defined]
    # WHEN the reaper runs
    reap(world.services, older_than_s=3600)
    # THEN the summary is made again from the windows left, and nothing of the span comes back
    with world.services.db.unit_of_work(ALICE) as session:
        ten = session.scalars(select(Segment).where(Segment.user_id == ALICE, Segment.duration_seconds == 600)).one()
    assert ten.processing_status == ProcessingStatus.COMPLETE and ten.caption
    assert postgres_mentions(world.admin_url, "|".join(marker(SA, i) for i in SPAN)) == {}
