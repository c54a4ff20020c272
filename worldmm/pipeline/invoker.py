"""The function invoker port: asynchronous invokes of pipeline functions (Lambda or in-process)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol


class FunctionInvoker(Protocol):
    """Fire-and-forget invocation of a named function with a JSON payload."""

    def invoke_async(self, function_name: str, payload: dict[str, Any]) -> None: ...


class LambdaInvoker:
    """Lambda `InvokeType=Event`."""

    def __init__(self, client: Any | None = None) -> None:
        import boto3

        self.client = client or boto3.client("lambda")

    def invoke_async(self, function_name: str, payload: dict[str, Any]) -> None:
        self.client.invoke(
            FunctionName=function_name, InvocationType="Event", Payload=json.dumps(payload).encode()
        )


class InProcessInvoker:
    """Dispatches to registered handlers in this process (local profile); records every invoke."""

    def __init__(self, handlers: dict[str, Callable[[dict[str, Any]], Any]] | None = None) -> None:
        self.handlers = dict(handlers or {})
        self.invocations: list[tuple[str, dict[str, Any]]] = []

    def register(self, function_name: str, handler: Callable[[dict[str, Any]], Any]) -> None:
        self.handlers[function_name] = handler

    def invoke_async(self, function_name: str, payload: dict[str, Any]) -> None:
        self.invocations.append((function_name, payload))
        handler = self.handlers.get(function_name)
        if handler is not None:
            handler(payload)
