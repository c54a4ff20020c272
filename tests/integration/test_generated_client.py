"""The phone's flow through a client generated from /openapi.json (openapi-python-client), not through httpx.

The client is generated at test time, offline, from the document the local gateway serves; if it cannot
express what the phone needs, the document (or the API) is what to fix, never the generated code.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.support.capture import post_upload
from tests.support.gateway import RunningGateway, local_capture_services, running_gateway
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.gateway.auth import issue_token
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, set_services

pytestmark = pytest.mark.integration

ALICE = "user-alice"
FRAMES = 2
STARTED = time.time() - 3600  # the session began an hour ago: its windows are memories by now
PACKAGE = "worldmm_phone_client"


@pytest.fixture
def local(settings: Settings, db: Database, scripted_llm: ScriptedLLM, tmp_path: Path) -> Iterator[Services]:
    """Local-profile services: real PostgreSQL, objects under tmp_path, the in-process dispatcher."""
    yield local_capture_services(settings, db, scripted_llm, tmp_path / "objects", FRAMES)
    set_services(None)


@pytest.fixture
def gateway(local: Services) -> Iterator[RunningGateway]:
    with running_gateway(local, clock=lambda: STARTED) as running:
        yield running


def generate_client(document_url: str, workdir: Path) -> ModuleType:
    """openapi-python-client over the served document, into `workdir`; returns the imported package."""
    document = workdir / "openapi.json"
    document.write_bytes(httpx.get(document_url, timeout=10).content)
    config = workdir / "generator.yaml"
    config.write_text(f"project_name_override: {PACKAGE}\npackage_name_override: {PACKAGE}\npost_hooks: []\n")
    generator = Path(sys.executable).with_name("openapi-python-client")
    done = subprocess.run(
        [str(generator), "generate", "--path", str(document), "--config", str(config), "--meta", "none",
         "--output-path", str(workdir / PACKAGE), "--fail-on-warning"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(workdir))
    try:
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(workdir))


def _post_all(uploads: list[Any], body: bytes) -> list[int]:
    """The presigned POSTs, as the phone makes them straight to the bucket (no API call, no token)."""
    return [post_upload(u, body) for u in uploads]


def test_generated_client_runs_the_phone_flow(gateway: RunningGateway, local: Services, tmp_path: Path) -> None:
    # GIVEN a client generated from the gateway's /openapi.json, with Alice's token
    client_pkg = generate_client(f"{gateway.url}/openapi.json", tmp_path)
    api = importlib.import_module(f"{PACKAGE}.api.default")
    models = importlib.import_module(f"{PACKAGE}.models")
    for name in ("capture_start", "capture_frames", "capture_audio", "capture_end", "chat", "chats_list",
                 "chat_messages"):
        importlib.import_module(f"{PACKAGE}.api.default.{name}")
    client = client_pkg.AuthenticatedClient(
        base_url=gateway.url, token=issue_token(ALICE, local.settings), raise_on_unexpected_status=True
    )
    with client:
        # WHEN the phone starts a session
        started = api.capture_start.sync(client=client)
        assert isinstance(started, models.StartSessionResult), started
        sid = started.session_id
        # AND uploads each window's frames and audio to the presigned URLs it is given
        for window in (0, 1):
            frames = api.capture_frames.sync(
                sid, client=client, body=models.PresignFramesRequest(window_index=window, count=FRAMES)
            )
            audio = api.capture_audio.sync(sid, client=client, body=models.PresignAudioRequest(window_index=window))
            assert isinstance(frames, models.PresignResult) and isinstance(audio, models.PresignResult)
            assert _post_all(frames.uploads, b"\xff\xd8frame" + bytes([window])) == [204] * FRAMES
            assert _post_all(audio.uploads, b"RIFF-wav") == [204]
        gateway.gateway.notifications.drain(timeout=120)
        # AND ends it
        ended = api.capture_end.sync(sid, client=client)
        assert isinstance(ended, models.EndSessionResult) and ended.session_id == sid
        # AND asks about it, lists her chats and reads the chat's messages
        asked = api.chat.sync(client=client, body=models.ChatRequest(question="What did Kate hold in the kitchen?"))
        assert isinstance(asked, models.ChatResponse), asked
        listed = api.chats_list.sync(client=client, body=models.ListChatsRequest())
        assert isinstance(listed, models.ChatsPage), listed
        page = api.chat_messages.sync(client=client, chat_id=asked.chat_id, limit=1)
        assert isinstance(page, models.MessagesPage), page
        older = api.chat_messages.sync(client=client, chat_id=asked.chat_id, cursor=page.next_cursor)
        assert isinstance(older, models.MessagesPage), older
        # AND a typed error answer reads as the document's ErrorBody
        refused = api.capture_end.sync("0" * 26, client=client)
    # THEN the answer comes from the captured windows, and the chat holds the question and the answer
    assert "mug" in asked.answer.lower()
    assert [c.id for c in listed.conversations] == [asked.chat_id]
    assert [m.role for m in page.messages] == ["assistant"] and page.next_cursor
    assert [(m.role, m.content) for m in older.messages] == [("user", "What did Kate hold in the kitchen?")]
    assert isinstance(refused, models.ErrorBody) and refused.message == "Forbidden"
