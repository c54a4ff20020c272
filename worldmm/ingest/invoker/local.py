"""The function invoker of the local profile: registered handlers called in this process."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


class InProcessInvoker:
    """Dispatches to registered handlers in this process (local profile); records every invoke.

    The handler gets the payload as Lambda would: decoded from its JSON, never the caller's own object, so a
    payload Lambda would refuse fails here too.
    """

    def __init__(self, handlers: dict[str, Callable[[dict[str, Any]], Any]] | None = None) -> None:
        self.handlers = dict(handlers or {})
        self.invocations: list[tuple[str, dict[str, Any]]] = []

    def register(self, function_name: str, handler: Callable[[dict[str, Any]], Any]) -> None:
        self.handlers[function_name] = handler

    def invoke_async(self, function_name: str, payload: dict[str, Any]) -> None:
        encoded = json.dumps(payload)
        self.invocations.append((function_name, json.loads(encoded)))
        handler = self.handlers.get(function_name)
        if handler is not None:
            handler(json.loads(encoded))
