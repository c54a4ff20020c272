"""The local gateway on a real 127.0.0.1 socket (uvicorn in a thread) for HTTP and MCP client tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette

from tests.support.harness import _free_port
from tests.support.ingest import make_ingest_services, script_window_models
from worldmm.config import AgentMode, Settings
from worldmm.db.engine import Database
from worldmm.gateway.app import Gateway, create_app
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, local_handlers


@dataclass
class RunningGateway:
    url: str
    app: Starlette

    @property
    def gateway(self) -> Gateway:
        gateway: Gateway = self.app.state.gateway
        return gateway


@contextmanager
def running_gateway(
    services: Services, clock: Callable[[], float] = time.time, **options: Any
) -> Iterator[RunningGateway]:
    """`worldmm serve` on an ephemeral port (`options`: create_app's); yields its base URL and app; stops it after."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    app = create_app(services, public_url=url, clock=clock, **options)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("gateway did not start")
        time.sleep(0.02)
    try:
        yield RunningGateway(url, app)
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def local_capture_services(
    settings: Settings, db: Database, llm: ScriptedLLM, objects: Path, frames: int
) -> Services:
    """Local-profile services as `worldmm serve` runs them: real PostgreSQL, objects under `objects`, windows of
    `frames` frames, the in-process dispatcher (capture's window close runs the ingest handler), the fixed plan."""
    local_settings = settings.model_copy(update={"capture_expected_frames": frames, "agent_mode": AgentMode.PLAN})
    invoker = InProcessInvoker()
    services = make_ingest_services(local_settings, db, llm, objects, invoker=invoker)
    invoker.handlers.update(local_handlers(services))
    script_window_models(llm)
    return services


class HumanScreen:
    """The confirmation channel as the human sees it (what MCP never carries): the codes shown, in order."""

    def __init__(self) -> None:
        self.shown: list[tuple[str, str, str]] = []

    def show(self, user_id: str, action: str, code: str, ttl_s: int) -> None:
        self.shown.append((user_id, action, code))

    def last_code(self, user_id: str) -> str:
        return [code for user, _, code in self.shown if user == user_id][-1]
