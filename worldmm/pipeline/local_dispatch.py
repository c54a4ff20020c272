"""The local profile's function table: async invokes run the same library code in-process."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

if TYPE_CHECKING:
    from worldmm.services import Services

logger = Logger(service="worldmm", child=True)

Handler = Callable[[dict[str, Any]], Any]


def _async_semantics(name: str, handler: Handler) -> Handler:
    """Like `InvocationType=Event`: the caller never sees the function's error; it is logged."""

    def run(payload: dict[str, Any]) -> Any:
        try:
            return handler(payload)
        except Exception:
            logger.exception("local_invoke_failed", extra={"function": name})
            return None

    return run


def local_handlers(services: Services) -> dict[str, Handler]:
    """Function name → in-process handler, for `InProcessInvoker`."""
    from worldmm.pipeline.events import IngestWindowEvent, RetriggerEvent
    from worldmm.pipeline.retrigger import retrigger
    from worldmm.pipeline.window import ingest_window

    settings = services.settings

    def ingest(payload: dict[str, Any]) -> Any:
        return ingest_window(services, IngestWindowEvent.model_validate(payload)).model_dump()

    def retrigger_session(payload: dict[str, Any]) -> Any:
        return retrigger(services, RetriggerEvent.model_validate(payload)).model_dump()

    return {
        settings.ingest_function_name: _async_semantics(settings.ingest_function_name, ingest),
        settings.retrigger_function_name: _async_semantics(
            settings.retrigger_function_name, retrigger_session
        ),
    }
