"""`GET /events` on `worldmm serve` (issue 65): each user's app events reach that user's stream only, within
2 s of the commit, in order, resumable with Last-Event-ID; the document states the endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from tests.support.gateway import RunningGateway, local_capture_services, running_gateway
from tests.support.ingest import put_session, put_window
from tests.support.sse import SseListener
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.gateway.auth import issue_token
from worldmm.ingest.events import IngestWindowEvent
from worldmm.ingest.window import ingest_window
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE, BOB = "user-alice", "user-bob"
WINDOWS = 4


@pytest.fixture
def local(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    yield local_capture_services(settings, db, scripted_llm, tmp_path / "objects", 2)
    set_services(None)


@pytest.fixture
def gateway(local: Services) -> Iterator[RunningGateway]:
    with running_gateway(local) as running:
        yield running


def ended_session(services: Services, session_id: str, user_id: str, windows: int) -> None:
    put_session(services.store, session_id, user_id=user_id)
    key = f"sessions/{session_id}/metadata.json"
    doc = json.loads(services.store.get(key))
    services.store.put(key, json.dumps({**doc, "endedAt": "2026-05-01T10:05:00+00:00"}).encode())
    for index in range(windows):
        put_window(services.store, session_id, index, frames=2)


def ingest_all(services: Services, session_id: str, user_id: str, windows: int) -> None:
    for index in range(windows):
        ingest_window(
            services, IngestWindowEvent(sessionId=session_id, userId=user_id, windowIndex=index, frameCount=2)
        )


def test_a_session_streams_its_events_to_its_owner_only_within_two_seconds(
    gateway: RunningGateway, local: Services
) -> None:
    # GIVEN Alice and Bob listening on /events
    alice = SseListener(f"{gateway.url}/events", issue_token(ALICE, local.settings)).start()
    bob = SseListener(f"{gateway.url}/events", issue_token(BOB, local.settings)).start()
    try:
        # WHEN Alice's ended session of four windows is ingested
        ended_session(local, "sess-alice", ALICE, WINDOWS)
        ingest_all(local, "sess-alice", ALICE, WINDOWS)
        got = alice.wait_for(WINDOWS + 1, timeout=10)
    finally:
        alice.stop()
        bob.stop()
    # THEN Alice received one WindowProcessed per window and one SessionProcessed, in order, each within 2 s
    assert [m.event for m in got] == ["WindowProcessed"] * WINDOWS + ["SessionProcessed"]
    assert [m.data["windowIndex"] for m in got[:WINDOWS]] == list(range(WINDOWS))
    assert all(m.data["userId"] == ALICE and m.data["sessionId"] == "sess-alice" for m in got)
    assert [int(m.id) for m in got] == sorted(int(m.id) for m in got)
    delays = [m.received - datetime.fromisoformat(m.data["occurredAt"]).timestamp() for m in got]
    assert max(delays) < 2.0, delays
    # AND Bob received nothing
    assert bob.messages == [] and bob.statuses and set(bob.statuses) == {200}


def test_a_stream_resumes_after_last_event_id_and_refuses_bad_requests(
    gateway: RunningGateway, local: Services
) -> None:
    # GIVEN Alice's session processed while she was not listening
    ended_session(local, "sess-away", ALICE, 2)
    ingest_all(local, "sess-away", ALICE, 2)
    token = issue_token(ALICE, local.settings)
    url = f"{gateway.url}/events"
    headers = {"Authorization": f"Bearer {token}"}
    # WHEN she reads from the start, and again after the first event's id
    everything = httpx.get(url, params={"after": "0", "wait": "0"}, headers=headers, timeout=10)
    ids = [line[4:] for line in everything.text.splitlines() if line.startswith("id: ")]
    rest = httpx.get(url, params={"wait": "0"}, headers={**headers, "Last-Event-ID": ids[0]}, timeout=10)
    fresh = httpx.get(url, params={"wait": "0"}, headers=headers, timeout=10)
    # THEN the first read has all three, the resumed one the two after the first, a fresh one none
    assert everything.status_code == 200 and everything.headers["content-type"].startswith("text/event-stream")
    assert [line for line in everything.text.splitlines() if line.startswith("event: ")] == [
        "event: WindowProcessed",
        "event: WindowProcessed",
        "event: SessionProcessed",
    ]
    assert [line[4:] for line in rest.text.splitlines() if line.startswith("id: ")] == ids[1:]
    assert "id: " not in fresh.text
    # AND without a token it is 401, with a bad position or wait 400, another method 404 (as API Gateway)
    assert httpx.get(url, params={"wait": "0"}, timeout=10).status_code == 401
    assert httpx.get(url, params={"after": "-1"}, headers=headers, timeout=10).status_code == 400
    assert httpx.get(url, params={"wait": "9999"}, headers=headers, timeout=10).json()["message"].startswith("wait")
    assert httpx.post(url, headers=headers, timeout=10).status_code == 404


def test_the_document_states_the_events_endpoint_and_its_schema(gateway: RunningGateway) -> None:
    document = httpx.get(f"{gateway.url}/openapi.json", timeout=10).json()
    operation = document["paths"]["/events"]["get"]
    assert operation["operationId"] == "Events"
    assert "text/event-stream" in operation["responses"]["200"]["content"]
    union = document["components"]["schemas"]["AppEvent"]
    assert set(union["discriminator"]["mapping"]) == {"WindowProcessed", "WindowFailed", "SessionProcessed"}
