"""What work tells the GPU controller: "I found the GPU down" (wake) and, from the DLQ consumer, which
messages it hid to wait for the GPU (defer / settle).

Adapters: `ControllerDemand` (aws: an async invoke of the controller function; the deferred-message registry
in the control table) and `NoController` (the local profile, or a fixed GPU_WORKER_URL: nothing to start).
A wake never raises: it must not replace the error the caller is handling.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger

if TYPE_CHECKING:
    from worldmm.gpu.aws import DynamoControlStore

logger = Logger(child=True)


class Invoker(Protocol):
    """Fire-and-forget invokes (worldmm.ingest.invoker.port.FunctionInvoker's adapters satisfy it)."""

    def invoke_async(self, function_name: str, payload: dict[str, Any]) -> None: ...


class GpuDemand(Protocol):
    def wake(self, reason: str) -> None:
        """Ask the controller to bring the GPU up (`reason`: ingest, dlq, chat, ...); never raises."""
        ...

    def defer(self, message_id: str, receipt_handle: str) -> None:
        """A DLQ message was hidden to wait for the GPU: the controller makes it visible once it is ready."""
        ...

    def settle(self, message_id: str) -> None:
        """A DLQ message no longer waits (its window was handled)."""
        ...


class NoController:
    """No controller to ask (local profile, or a fixed worker URL)."""

    def wake(self, reason: str) -> None:
        return None

    def defer(self, message_id: str, receipt_handle: str) -> None:
        return None

    def settle(self, message_id: str) -> None:
        return None


class ControllerDemand:
    """Wakes the controller function (async invoke, at most once per `debounce_s` per process)."""

    def __init__(
        self,
        control: DynamoControlStore,
        invoker: Invoker,
        function_name: str,
        *,
        debounce_s: float = 20.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.control = control
        self.invoker = invoker
        self.function_name = function_name
        self.debounce_s = debounce_s
        self.clock = clock
        self._last_wake: float | None = None
        self._lock = threading.Lock()

    def wake(self, reason: str) -> None:
        now = self.clock()
        with self._lock:
            if self._last_wake is not None and now - self._last_wake < self.debounce_s:
                return
            self._last_wake = now
        try:
            self.invoker.invoke_async(self.function_name, {"action": "reconcile", "reason": reason})
            logger.info("gpu_wake_sent", extra={"flow": "gpu_controller", "step": "gpu_wake_sent", "reason": reason})
        except Exception as exc:  # the scheduled run starts it within a minute anyway
            with self._lock:
                self._last_wake = None
            logger.warning(
                "gpu_wake_failed",
                extra={"flow": "gpu_controller", "step": "gpu_wake_failed", "error": type(exc).__name__},
            )

    def defer(self, message_id: str, receipt_handle: str) -> None:
        self.control.put_deferred(message_id, receipt_handle, self.clock())

    def settle(self, message_id: str) -> None:
        self.control.forget_deferred(message_id)
