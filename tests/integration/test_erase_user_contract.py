"""Issue 26: each store's adapter erases one user (forget-me), run against both adapters of every port.

Object store (S3 on moto with versions, a directory), capture state (DynamoDB on moto, the local store),
session catalog (the sessions table on moto, metadata.json in the object store), chat store (DynamoDB on
moto, the embedded PostgreSQL) and graph cache (a real redis-server, the in-process cache). Each suite
gives the user's data and another user's (an id sharing the first's prefix where keys are built from ids),
erases the user, and checks that nothing of theirs is left, everything of the other user is, and that a
second erase finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import make_settings
from worldmm.capture.dynamo import CaptureStore, capture_table_definitions
from worldmm.capture.local import LocalCaptureStore
from worldmm.capture.models import CaptureSession, UploadKind
from worldmm.capture.port import CaptureStatePort
from worldmm.chat.dynamo import DynamoChatRepository, dynamo_table_definitions
from worldmm.chat.port import ChatRepository
from worldmm.chat.postgres import PostgresChatRepository
from worldmm.chat.settings import ChatSettings
from worldmm.db.models import MemoryType
from worldmm.graph.build import GraphKey, UserGraph, graph_from_edges
from worldmm.graph.cache.local import LocalGraphCache
from worldmm.graph.cache.port import GraphCache
from worldmm.graph.cache.redis import RedisGraphCache
from worldmm.ingest.catalog.dynamo import DynamoSessionCatalog
from worldmm.ingest.catalog.local import StoreSessionCatalog
from worldmm.ingest.catalog.port import SessionCatalog
from worldmm.media.objects import DirectoryObjectStore, ErasableObjectStore, S3ObjectStore

pytestmark = pytest.mark.integration

ALICE = "alice"
NEIGHBOUR = "alice:semantic"  # shares alice's key prefix in the graph cache
BOB = "bob"
BUCKET = "worldmm-frames-test"
DAY = "2027-01-15"
CREATED = "2027-01-15T09:30:00+00:00"


def _dynamodb() -> Any:
    import boto3

    settings = make_settings()
    client = boto3.client("dynamodb", region_name="us-east-1")
    for definition in capture_table_definitions(settings.sessions_table, settings.capture_windows_table):
        client.create_table(**definition)
    return client


# --- object store -------------------------------------------------------------------------------------


@dataclass
class Objects:
    store: ErasableObjectStore
    versions: Callable[[str], list[str]]
    """Every stored version under a prefix (S3: each version and delete marker; a directory: its files)."""


@pytest.fixture(params=["s3", "directory"])
def objects(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Objects]:
    if request.param == "directory":
        store = DirectoryObjectStore(tmp_path / "objects")
        yield Objects(store, store.list)
        return
    request.getfixturevalue("aws")
    import boto3

    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    client.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})

    def versions(prefix: str) -> list[str]:
        found = client.list_object_versions(Bucket=BUCKET, Prefix=prefix)
        return sorted(
            f"{v['Key']}@{v['VersionId']}" for v in [*found.get("Versions", []), *found.get("DeleteMarkers", [])]
        )

    yield Objects(S3ObjectStore(BUCKET, client=client, page_size=2), versions)


def test_erase_user_object_store_erases_every_version_under_the_users_prefixes_only(objects: Objects) -> None:
    # GIVEN alice's session folder (a frame written twice), and folders beside it: one whose name extends hers
    store = objects.store
    for data in (b"first", b"second"):
        store.put("sessions/s-alice/window_0/frame_0000.jpg", data)
    store.put("sessions/s-alice/metadata.json", b"{}")
    others = ["sessions/s-alice2/window_0/frame_0000.jpg", "sessions/s-bob/window_0/frame_0000.jpg"]
    for key in others:
        store.put(key, b"kept")
    kept = objects.versions("sessions/s-alice2/") + objects.versions("sessions/s-bob/")
    # WHEN her prefixes are erased
    counts = store.erase_prefixes(["sessions/s-alice/"])
    # THEN every version under them went (and was counted), nothing beside them; a second erase finds nothing
    assert objects.versions("sessions/s-alice/") == []
    assert sum(counts.values()) == (3 if isinstance(store, S3ObjectStore) else 2)  # S3: both versions of the frame
    assert objects.versions("sessions/s-alice2/") + objects.versions("sessions/s-bob/") == kept
    assert [store.get(key) for key in others] == [b"kept", b"kept"]
    assert sum(store.erase_prefixes(["sessions/s-alice/"]).values()) == 0
    assert store.erase_prefixes([]) == {}


def test_erase_user_object_store_refuses_a_prefix_that_names_no_folder(objects: Objects) -> None:
    objects.store.put("sessions/s-alice/audio.wav", b"RIFF")
    with pytest.raises(ValueError):
        objects.store.erase_prefixes(["sessions/s-al"])
    assert objects.store.list("sessions/") == ["sessions/s-alice/audio.wav"]


# --- capture state ------------------------------------------------------------------------------------


@pytest.fixture(params=["dynamodb", "local"])
def capture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CaptureStatePort]:
    if request.param == "local":
        yield LocalCaptureStore(DirectoryObjectStore(tmp_path / "objects"))
        return
    request.getfixturevalue("aws")
    settings = make_settings()
    yield CaptureStore(settings.sessions_table, settings.capture_windows_table, client=_dynamodb())


def _open(capture: CaptureStatePort, user: str, session_id: str, *indices: int) -> None:
    for index in indices:
        assert capture.record_open_upload(user, session_id, index, UploadKind.FRAME, 0, 1_800_000_000.0) is not None


def test_erase_user_capture_state_erases_the_users_window_buffers_only(capture: CaptureStatePort) -> None:
    # GIVEN alice's windows, and bob's (one in a session of his that the erase is also given)
    _open(capture, ALICE, "s-alice", 0, 1)
    _open(capture, BOB, "s-bob", 0)
    # WHEN alice's windows are erased
    counts = capture.erase_windows(ALICE, ["s-alice", "s-bob"])
    # THEN hers are gone (and counted), bob's stays; a second erase finds nothing
    assert sum(counts.values()) == 2 and len(counts) == 1
    assert capture.get_window("s-alice", 0) is None and capture.get_window("s-alice", 1) is None
    bobs = capture.get_window("s-bob", 0)
    assert bobs is not None and bobs.user_id == BOB
    assert capture.erase_windows(ALICE, ["s-alice", "s-bob"]) == {}


def test_erase_user_capture_state_erases_only_the_windows_asked_for(capture: CaptureStatePort) -> None:
    _open(capture, ALICE, "s-alice", 0, 1, 2)
    counts = capture.erase_windows(ALICE, ["s-alice"], {"s-alice": {1, 2}})
    assert sum(counts.values()) == 2
    assert [capture.get_window("s-alice", i) is not None for i in range(3)] == [True, False, False]


# --- session catalog ----------------------------------------------------------------------------------


@dataclass
class Catalog:
    sessions: SessionCatalog
    capture: CaptureStatePort
    """The writer of the same profile: sessions and the day's counters, as capture's start writes them."""


@pytest.fixture(params=["dynamodb", "object_store"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    if request.param == "object_store":
        store = DirectoryObjectStore(tmp_path / "objects")
        yield Catalog(StoreSessionCatalog(store), LocalCaptureStore(store))
        return
    request.getfixturevalue("aws")
    settings = make_settings()
    client = _dynamodb()
    yield Catalog(
        DynamoSessionCatalog(settings.sessions_table, client=client),
        CaptureStore(settings.sessions_table, settings.capture_windows_table, client=client),
    )


def _start(catalog: Catalog, user: str, session_id: str) -> None:
    assert catalog.capture.reserve_session(user, DAY, 5)
    catalog.capture.create_session(CaptureSession(session_id=session_id, user_id=user, created_at=CREATED))


def test_erase_user_session_catalog_erases_the_users_entries_and_counters_only(catalog: Catalog) -> None:
    # GIVEN two sessions of alice and one of bob, each counted against its user's day
    for user, session_id in ((ALICE, "s-alice-1"), (ALICE, "s-alice-2"), (BOB, "s-bob")):
        _start(catalog, user, session_id)
    assert catalog.sessions.user_sessions(ALICE) == ["s-alice-1", "s-alice-2"]
    assert catalog.sessions.user_sessions(BOB) == ["s-bob"]
    # WHEN alice is erased (asked to erase bob's entry too, which names someone else)
    counts = catalog.sessions.erase_user(ALICE, ["s-alice-1", "s-alice-2", "s-bob"])
    # THEN her entries and counters are gone (she has a full allowance again), bob's are kept
    assert sum(counts.values()) == 3  # two entries, one day's counters
    assert catalog.sessions.user_sessions(ALICE) == []
    assert catalog.sessions.get("s-alice-1") is None and catalog.sessions.get("s-alice-2") is None
    bobs = catalog.sessions.get("s-bob")
    assert bobs is not None and bobs.user_id == BOB and catalog.sessions.user_sessions(BOB) == ["s-bob"]
    assert catalog.capture.reserve_session(ALICE, DAY, 1)
    assert not catalog.capture.reserve_session(BOB, DAY, 1)  # his day's count survived
    # AND a second erase finds nothing more than the counter just made
    again = catalog.sessions.erase_user(ALICE, ["s-alice-1", "s-alice-2"])
    assert sum(again.values()) == 1


# --- chat store ---------------------------------------------------------------------------------------


@pytest.fixture(params=["dynamodb", "postgres"])
def chats(request: pytest.FixtureRequest) -> ChatRepository:
    if request.param == "dynamodb":
        import boto3

        request.getfixturevalue("aws")
        settings = make_settings(worldmm_profile="aws")
        client = boto3.client("dynamodb", region_name="us-east-1")
        for definition in dynamo_table_definitions(ChatSettings.of(settings)):
            client.create_table(**definition)
        return DynamoChatRepository(ChatSettings.of(settings), client)
    return PostgresChatRepository(ChatSettings.of(request.getfixturevalue("settings")), request.getfixturevalue("db"))


def test_erase_user_chat_store_erases_the_users_chats_and_messages_only(chats: ChatRepository) -> None:
    # GIVEN two chats of alice (three messages) and one of bob
    first = chats.save_turn(ALICE, None, "where is my mug?", "On the counter.")
    second = chats.create_chat(ALICE)
    chats.save_message(ALICE, second, "user", "and my keys?")
    bobs = chats.save_turn(BOB, None, "where is my hat?", "On the hook.")
    # WHEN alice is erased
    counts = chats.erase_user(ALICE)
    # THEN her chats and messages went (and were counted), bob's chat is whole; a second erase finds nothing
    assert sorted(counts.values()) == [2, 3]
    assert chats.list_chats(ALICE).conversations == []
    assert not chats.chat_owned_by(ALICE, first) and not chats.chat_owned_by(ALICE, second)
    assert [c.id for c in chats.list_chats(BOB).conversations] == [bobs]
    assert [m.content for m in chats.get_messages(BOB, bobs).messages] == ["On the hook.", "where is my hat?"]
    assert chats.erase_user(ALICE) == {}


# --- graph cache --------------------------------------------------------------------------------------


@dataclass
class Cache:
    cache: GraphCache
    reader: Callable[[], GraphCache]
    """What another process sees afterwards (Redis: a fresh cache object; in-process: the same cache)."""
    shares_snapshots: bool


@pytest.fixture(params=["redis", "local"])
def graphs(request: pytest.FixtureRequest) -> Iterator[Cache]:
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        request.getfixturevalue("redis_client")  # an empty database for each test
        settings = make_settings(redis_url=url, redis_timeout_s=1.0)
        yield Cache(RedisGraphCache.from_url(url, settings), lambda: RedisGraphCache.from_url(url, settings), True)
        return
    cache = LocalGraphCache(capacity=16)
    yield Cache(cache, lambda: cache, False)


def _graph(tag: int) -> UserGraph:
    a, b = (tag * 2 + 1).to_bytes(16, "big"), (tag * 2 + 2).to_bytes(16, "big")
    return graph_from_edges([a], [b], [tag.to_bytes(16, "big")], [b"s" * 16])


class Builder:
    def __init__(self) -> None:
        self.builds = 0

    def __call__(self) -> UserGraph:
        self.builds += 1
        return _graph(1)


def test_erase_user_graph_cache_erases_the_users_graphs_and_snapshots_only(graphs: Cache) -> None:
    # GIVEN cached graphs (and snapshots) of alice, of a user whose id extends hers, and of bob
    keys = {
        user: [GraphKey(user, MemoryType.SEMANTIC), GraphKey(user, MemoryType.EPISODIC, 30)]
        for user in (ALICE, NEIGHBOUR, BOB)
    }
    for user, user_keys in keys.items():
        for key in user_keys:
            graphs.cache.get_or_build(key, Builder())
        graphs.cache.save_snapshot(user, "lexical", 7, user.encode())
    # WHEN alice is erased
    counts = graphs.cache.erase_user(ALICE)
    # THEN another process builds her graphs afresh and finds no snapshot of hers; the others' are served
    reader = graphs.reader()
    rebuilt = {user: Builder() for user in keys}
    for user, user_keys in keys.items():
        for key in user_keys:
            reader.get_or_build(key, rebuilt[user])
    assert {user: b.builds for user, b in rebuilt.items()} == {ALICE: 2, NEIGHBOUR: 0, BOB: 0}
    assert reader.load_snapshot(ALICE, "lexical", 7) is None
    if graphs.shares_snapshots:
        assert bytes(reader.load_snapshot(NEIGHBOUR, "lexical", 7) or b"") == NEIGHBOUR.encode()
        assert sum(counts.values()) >= 3  # two graphs (with their generations where kept) and the snapshot


def test_erase_user_graph_cache_a_second_erase_finds_nothing(graphs: Cache) -> None:
    graphs.cache.get_or_build(GraphKey(ALICE, MemoryType.SEMANTIC), Builder())
    graphs.cache.erase_user(ALICE)
    assert sum(graphs.cache.erase_user(ALICE).values()) == 0


def test_erase_user_graph_cache_an_unreachable_redis_raises() -> None:
    # A Redis that cannot be reached must fail the erase (forget-me then reports it incomplete), never pass
    settings = make_settings(redis_url="redis://127.0.0.1:1/0", redis_timeout_s=0.2)
    cache = RedisGraphCache.from_url("redis://127.0.0.1:1/0", settings)
    with pytest.raises(Exception):  # noqa: B017 - redis-py's connection error
        cache.erase_user(ALICE)
