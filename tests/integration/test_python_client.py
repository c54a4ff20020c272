"""The Python client (clients/python, issue 65): the committed generated package is a fresh generation of
openapi.json, and the phone's whole flow runs through it and its hand-written kit against `worldmm serve`."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from scripts.gen_python_client import COMMITTED, differences, generate
from tests.support.gateway import RunningGateway, local_capture_services, running_gateway
from tests.support.phone_session import phone_session
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.gateway.auth import issue_token
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

FRAMES = 16
STARTED = time.time() - 3600  # the session began an hour ago: its windows are memories by now
FLOW_LIMIT_S = 120


@pytest.fixture(scope="module")
def kit() -> Iterator[Any]:
    """The committed package and kit, imported as an app would after `pip install ./clients/python`."""
    sys.path.insert(0, str(COMMITTED.parent))
    try:
        import worldmm_kit

        yield worldmm_kit
    finally:
        sys.path.remove(str(COMMITTED.parent))


@pytest.fixture
def local(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    yield local_capture_services(settings, db, scripted_llm, tmp_path / "objects", FRAMES)
    set_services(None)


@pytest.fixture
def gateway(local: Services) -> Iterator[RunningGateway]:
    with running_gateway(local, clock=lambda: STARTED) as running:
        yield running


def test_the_committed_python_client_is_a_fresh_generation_of_openapi_json(tmp_path: Path) -> None:
    fresh = generate(tmp_path / "worldmm_client")
    assert differences(fresh, COMMITTED) == [], "stale clients/python/worldmm_client: make clients"


def test_a_429_is_sent_again_after_its_retry_after_and_a_long_one_is_returned(kit: Any) -> None:
    answers = [httpx.Response(429, headers={"Retry-After": "2"}), httpx.Response(201, json={"ok": True})]
    slept: list[float] = []
    transport = kit.RetryTransport(httpx.MockTransport(lambda request: answers.pop(0)), sleep=slept.append)
    assert httpx.Client(transport=transport).post("http://api.test/sessions").status_code == 201
    assert slept == [2.0]
    daily = kit.RetryTransport(
        httpx.MockTransport(lambda request: httpx.Response(429, headers={"Retry-After": "40000"})),
        sleep=lambda s: pytest.fail("slept"),
    )
    assert httpx.Client(transport=daily).post("http://api.test/sessions").status_code == 429


def test_the_python_client_runs_the_phone_flow_against_serve(
    gateway: RunningGateway, local: Services, kit: Any, tmp_path: Path
) -> None:
    from worldmm_client.api.default import (
        capture_audio,
        capture_end,
        capture_frames,
        capture_start,
        chat,
        chat_messages,
        chats_list,
        entity_correct,
        memories_forget,
        memories_list,
        memory_get,
        session_forget,
        session_status,
    )
    from worldmm_client.models import (
        ChatRequest,
        EntityCorrectionRequest,
        ListChatsRequest,
        PresignAudioRequest,
        PresignFramesRequest,
    )

    began = time.monotonic()
    # GIVEN the short sample session as the phone holds it, the wearer's client and another user's
    session_dir = phone_session(tmp_path / "session")
    alice, bob = issue_token("user-alice", local.settings), issue_token("user-bob", local.settings)
    app, other = kit.connect(gateway.url, alice), kit.connect(gateway.url, bob)
    received: list[Any] = []
    stop = threading.Event()

    def listen() -> None:
        for event in kit.events(gateway.url, alice, after="0", wait=1, until=stop.is_set):
            received.append(event)

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    # WHEN the phone starts a session, uploads each window's frames and audio, and ends it
    sid = capture_start.sync(client=app).session_id
    windows = sorted(p for p in session_dir.iterdir() if p.name.startswith("window_"))
    for window in windows:
        index = int(window.name.split("_")[1])
        frames = sorted(window.glob("*.jpg"))
        request = PresignFramesRequest(window_index=index, count=len(frames))
        presigned = capture_frames.sync(sid, client=app, body=request)
        assert [kit.upload(u, f.read_bytes()) for u, f in zip(presigned.uploads, frames, strict=True)] == [204] * 16
        audio = capture_audio.sync(sid, client=app, body=PresignAudioRequest(window_index=index))
        assert kit.upload(audio.uploads[0], (window / "audio.wav").read_bytes()) == 204
    assert capture_end.sync(sid, client=app).session_id == sid
    # AND waits for the push that its memories are ready
    deadline = time.monotonic() + 90
    while not any(e.type_ == "SessionProcessed" and e.session_id == sid for e in received):
        assert time.monotonic() < deadline, received
        time.sleep(0.05)
    stop.set()
    # THEN four windows and one session were reported, and the status agrees
    mine = [e for e in received if e.session_id == sid]
    assert sorted(e.window_index for e in mine if e.type_ == "WindowProcessed") == [0, 1, 2, 3]
    assert [(e.windows, e.complete, e.failed) for e in mine if e.type_ == "SessionProcessed"] == [(4, 4, 0)]
    status = session_status.sync(sid, client=app)
    assert status.ended and status.counts.complete == 4
    # WHEN the wearer asks, follows up, starts another chat, and pages through chats and messages
    first = chat.sync(client=app, body=ChatRequest(question="What did Kate hold in the kitchen?"))
    chat.sync(client=app, body=ChatRequest(question="And who was there?", chat_id=first.chat_id))
    second = chat.sync(client=app, body=ChatRequest(question="Where was I?"))
    chats = list(kit.pages(lambda c: chats_list.sync(client=app, body=ListChatsRequest(cursor=c, limit=1)),
                           lambda p: p.conversations))
    messages = list(kit.pages(lambda c: chat_messages.sync(client=app, chat_id=first.chat_id, limit=1,
                                                           **({"cursor": c} if c else {})),
                              lambda p: p.messages))
    memories = list(kit.pages(lambda c: memories_list.sync(client=app, limit=2, **({"cursor": c} if c else {})),
                              lambda p: p.memories))
    # THEN the answer comes from the session, and every page was read
    assert "mug" in first.answer.lower()
    assert sorted(c.id for c in chats) == sorted([first.chat_id, second.chat_id])
    assert [m.role for m in messages] == ["assistant", "user", "assistant", "user"]
    windows_30 = [m for m in memories if m.session_id == sid and m.duration_seconds == 30]
    assert len(windows_30) == 4
    detail = memory_get.sync(windows_30[1].id, client=app)
    # AND another user's token is 403 on every one of the wearer's ids
    refused = [
        capture_frames.sync_detailed(sid, client=other, body=PresignFramesRequest(window_index=0, count=1)),
        capture_audio.sync_detailed(sid, client=other, body=PresignAudioRequest(window_index=0)),
        capture_end.sync_detailed(sid, client=other),
        session_status.sync_detailed(sid, client=other),
        session_forget.sync_detailed(sid, client=other),
        chat_messages.sync_detailed(client=other, chat_id=first.chat_id),
        chat.sync_detailed(client=other, body=ChatRequest(question="Hello?", chat_id=first.chat_id)),
        memory_get.sync_detailed(detail.id, client=other),
        entity_correct.sync_detailed(detail.entities[0].id, client=other, body=EntityCorrectionRequest(name="Mallory")),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused)
    assert {r.parsed.message for r in refused} == {"Forbidden"}
    # WHEN the wearer forgets window 1's span
    span = windows_30[1]
    forgotten = memories_forget.sync(
        client=app, from_=datetime.fromisoformat(span.start_time), to=datetime.fromisoformat(span.end_time)
    )
    left = [m for m in memories_list.sync(client=app).memories if m.session_id == sid and m.duration_seconds == 30]
    # THEN only that window's memory is gone
    assert forgotten.deleted["postgres.windows"] >= 1
    assert sorted(m.window_index for m in left) == [0, 2, 3]
    assert memory_get.sync_detailed(span.id, client=app).status_code == 403
    listener.join(timeout=10)
    assert time.monotonic() - began < FLOW_LIMIT_S


def test_the_python_client_builds_as_one_wheel_with_its_kit(tmp_path: Path) -> None:
    import subprocess
    import zipfile

    # WHEN clients/python is built as a wheel (what `pip install ./clients/python` installs)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(COMMITTED.parent)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # THEN it holds the generated package and the kit
    [wheel] = tmp_path.glob("worldmm_client-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "worldmm_kit/__init__.py" in names and "worldmm_client/api/default/events.py" in names
