"""The local gateway on a real 127.0.0.1 socket (uvicorn in a thread) for HTTP and MCP client tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette

from tests.support.harness import _free_port
from worldmm.gateway.app import Gateway, create_app
from worldmm.services import Services


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


class HumanScreen:
    """The confirmation channel as the human sees it (what MCP never carries): the codes shown, in order."""

    def __init__(self) -> None:
        self.shown: list[tuple[str, str, str]] = []

    def show(self, user_id: str, action: str, code: str, ttl_s: int) -> None:
        self.shown.append((user_id, action, code))

    def last_code(self, user_id: str) -> str:
        return [code for user, _, code in self.shown if user == user_id][-1]
