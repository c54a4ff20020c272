"""A whole capture through `worldmm serve`: start, upload two windows, end, then ask about them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.support.capture import post_upload
from tests.support.gateway import RunningGateway, local_capture_services, running_gateway
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.models import Segment
from worldmm.gateway.auth import issue_token
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE = "user-alice"
FRAMES = 2
STARTED = time.time() - 3600  # the session began an hour ago: its windows are memories by now


@pytest.fixture
def local(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    """Local-profile services: real PostgreSQL, objects under tmp_path, the in-process dispatcher."""
    yield local_capture_services(settings, db, scripted_llm, tmp_path / "objects", FRAMES)
    set_services(None)


@pytest.fixture
def gateway(local: Services) -> Iterator[RunningGateway]:
    with running_gateway(local, clock=lambda: STARTED) as running:
        yield running


def _post_all(uploads: list[dict[str, Any]], body: bytes) -> list[int]:
    return [post_upload(u, body) for u in uploads]


def test_capture_over_http_is_ingested_and_answered(gateway: RunningGateway, local: Services) -> None:
    headers = {"Authorization": f"Bearer {issue_token(ALICE, local.settings)}"}
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=60) as client:
        # GIVEN a session started from the phone
        started = client.post("/sessions")
        assert started.status_code == 201, started.text
        sid = started.json()["sessionId"]
        # WHEN it uploads the frames and audio of two windows to the URLs it was given
        for window in (0, 1):
            frames = client.post(f"/sessions/{sid}/frames", json={"windowIndex": window, "count": FRAMES})
            audio = client.post(f"/sessions/{sid}/audio", json={"windowIndex": window})
            assert frames.status_code == 200 and audio.status_code == 200, (frames.text, audio.text)
            assert all(u["url"] == gateway.url + "/uploads/" for u in frames.json()["uploads"])
            assert _post_all(frames.json()["uploads"], b"\xff\xd8frame" + bytes([window])) == [204] * FRAMES
            assert _post_all(audio.json()["uploads"], b"RIFF-wav") == [204]
        gateway.gateway.notifications.drain(timeout=120)
        # AND ends the session
        ended = client.post(f"/sessions/{sid}/end")
        # THEN both windows closed as complete and were ingested in-process into her memory
        assert ended.status_code == 200 and ended.json()["closedWindows"] == []
        with local.db.unit_of_work(ALICE) as session:
            segments = session.execute(
                select(Segment).where(Segment.session_id == sid, Segment.duration_seconds == 30)
            ).scalars().all()
        assert sorted(s.window_index for s in segments) == [0, 1]
        # AND a question about them is answered from them, citing their segments
        asked = client.post("/memories/chat/verbose", json={"question": "What did Kate hold in the kitchen?"})
    assert asked.status_code == 200, asked.text
    body = asked.json()
    assert "mug" in body["answer"].lower()
    cited = {c["segment_id"] for c in body["trace"]["citations"]}
    assert cited and cited <= {str(s.id) for s in segments}


def test_upload_target_refuses_a_tampered_or_unsigned_put(gateway: RunningGateway, local: Services) -> None:
    headers = {"Authorization": f"Bearer {issue_token(ALICE, local.settings)}"}
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=30) as client:
        sid = client.post("/sessions").json()["sessionId"]
        [upload] = client.post(f"/sessions/{sid}/audio", json={"windowIndex": 0}).json()["uploads"]
    other_key = upload["key"].replace("window_0", "window_7")
    assert post_upload(upload, b"x", key=other_key) == 403
    assert post_upload(upload, b"x", signature=None) == 403
    assert post_upload(upload, b"x", **{"Content-Type": "text/plain"}) == 403
    assert post_upload(upload, b"x", **{"max-bytes": str(10**9)}) == 403  # the length bound is signed too
    assert not local.store.exists(upload["key"]) and not local.store.exists(other_key)
