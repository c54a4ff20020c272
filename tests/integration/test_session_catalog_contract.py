"""The session catalog port's contract, run against the DynamoDB sessions table (moto) and the object store.

Sessions are recorded as the deployment records them: through the capture state adapter of the same profile
(`CaptureStore` writes the sessions table item, `LocalCaptureStore` the session's metadata.json), so the suite
also pins that what capture writes is what ingest and retrigger read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import make_settings
from worldmm.capture.dynamo import CaptureStore, capture_table_definitions
from worldmm.capture.local import LocalCaptureStore
from worldmm.capture.models import CaptureSession
from worldmm.capture.port import CaptureStatePort
from worldmm.ingest.catalog.dynamo import DynamoSessionCatalog
from worldmm.ingest.catalog.local import StoreSessionCatalog
from worldmm.ingest.catalog.port import SessionCatalog, owned_session, session_info
from worldmm.ingest.events import EventRejected
from worldmm.media.objects import DirectoryObjectStore

pytestmark = pytest.mark.integration

CREATED = "2027-01-15T09:30:00+00:00"


@dataclass
class Catalog:
    sessions: SessionCatalog  # named as the ports owned_session uses name it
    capture: CaptureStatePort
    """The writer of the same profile: capture's start and end."""
    write_raw: Callable[[str, dict[str, Any]], None]
    """A catalog entry written by something other than capture (an offline recording's metadata)."""


@pytest.fixture(params=["dynamodb", "object_store"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    if request.param == "object_store":
        store = DirectoryObjectStore(tmp_path / "objects")

        def put_metadata(session_id: str, doc: dict[str, Any]) -> None:
            store.put(f"sessions/{session_id}/metadata.json", json.dumps(doc).encode())

        yield Catalog(StoreSessionCatalog(store), LocalCaptureStore(store), put_metadata)
        return
    request.getfixturevalue("aws")
    import boto3
    from boto3.dynamodb.types import TypeSerializer

    settings = make_settings()
    client = boto3.client("dynamodb", region_name="us-east-1")
    for definition in capture_table_definitions(settings.sessions_table, settings.capture_windows_table):
        client.create_table(**definition)
    serialize = TypeSerializer().serialize

    def put_item(session_id: str, doc: dict[str, Any]) -> None:
        item = {"sessionId": session_id, **doc}
        client.put_item(TableName=settings.sessions_table, Item={k: serialize(v) for k, v in item.items()})

    yield Catalog(
        DynamoSessionCatalog(settings.sessions_table, client=client),
        CaptureStore(settings.sessions_table, settings.capture_windows_table, client=client),
        put_item,
    )


def test_session_catalog_finds_a_started_session_with_its_owner_and_start(catalog: Catalog) -> None:
    catalog.capture.create_session(CaptureSession(session_id="s-alice", user_id="alice", created_at=CREATED))
    info = catalog.sessions.get("s-alice")
    assert info is not None
    assert (info.session_id, info.user_id) == ("s-alice", "alice")
    assert info.created_at == datetime(2027, 1, 15, 9, 30, tzinfo=UTC)
    assert info.ended is False


def test_session_catalog_an_unknown_session_is_none(catalog: Catalog) -> None:
    catalog.capture.create_session(CaptureSession(session_id="s-alice", user_id="alice", created_at=CREATED))
    assert catalog.sessions.get("s-nobody") is None
    assert session_info(catalog, "s-nobody") is None


def test_session_catalog_sees_the_session_end(catalog: Catalog) -> None:
    catalog.capture.create_session(CaptureSession(session_id="s-alice", user_id="alice", created_at=CREATED))
    catalog.capture.mark_session_ended("s-alice", "2027-01-15T10:00:00+00:00")
    info = catalog.sessions.get("s-alice")
    assert info is not None and info.ended and info.user_id == "alice"


def test_session_catalog_reads_window_counts_and_epoch_starts(catalog: Catalog) -> None:
    # An entry written by a recording tool rather than capture: epoch milliseconds and a window count
    catalog.write_raw("s-rec", {"userId": "alice", "video_start_ms": 1_800_000_000_000, "windowCount": 3})
    info = catalog.sessions.get("s-rec")
    assert info is not None
    assert info.created_at == datetime.fromtimestamp(1_800_000_000, tz=UTC)
    assert info.windows() == {0: 0, 1: 0, 2: 0}


def test_session_catalog_owner_check_accepts_only_the_owner(catalog: Catalog) -> None:
    # GIVEN alice's session and bob's
    catalog.capture.create_session(CaptureSession(session_id="s-alice", user_id="alice", created_at=CREATED))
    catalog.capture.create_session(CaptureSession(session_id="s-bob", user_id="bob", created_at=CREATED))
    # THEN an ingest or retrigger event for alice is carried out on her session only
    assert owned_session(catalog, "s-alice", "alice").user_id == "alice"
    with pytest.raises(EventRejected) as not_hers:
        owned_session(catalog, "s-bob", "alice")
    assert not_hers.value.reason == "session_not_owned"
    with pytest.raises(EventRejected) as unknown:
        owned_session(catalog, "s-nobody", "alice")
    assert unknown.value.reason == "unknown_session"


def test_session_catalog_owner_check_refuses_a_session_without_a_recorded_owner(catalog: Catalog) -> None:
    # GIVEN an entry that names no owner (the event's userId alone is never trusted)
    catalog.write_raw("s-orphan", {"createdAt": CREATED, "windowCount": 2})
    info = catalog.sessions.get("s-orphan")
    assert info is not None and info.user_id is None
    with pytest.raises(EventRejected) as rejected:
        owned_session(catalog, "s-orphan", "alice")
    assert rejected.value.reason == "session_not_owned"
