"""The function invoker port: asynchronous invokes of pipeline functions.

Adapters: `LambdaInvoker` (worldmm.ingest.invoker.aws_lambda, the deployment) and `InProcessInvoker`
(worldmm.ingest.invoker.local, the local profile). tests/integration/test_function_invoker_contract.py is
the contract both meet.
"""

from __future__ import annotations

from typing import Any, Protocol


class FunctionInvoker(Protocol):
    """Fire-and-forget invocation of a named function with a JSON payload."""

    def invoke_async(self, function_name: str, payload: dict[str, Any]) -> None:
        """Hand `payload` (JSON-serialisable, else TypeError) to `function_name` once, without waiting for it."""
        ...
