"""Charging a question to its asker's allowance, where the routes that call models meet it (chat, MCP `ask`)."""

from __future__ import annotations

import time
from typing import Protocol

from aws_lambda_powertools import Logger

from worldmm.allowance.port import Allowances
from worldmm.allowance.settings import AllowanceSettings
from worldmm.errors import MemoryUnavailableError, QuotaExceeded

logger = Logger(child=True)


class AllowancePorts(Protocol):
    @property
    def allowance_settings(self) -> AllowanceSettings: ...

    @property
    def allowances(self) -> Allowances: ...


def question_cost(settings: AllowanceSettings) -> int:
    """What one question takes from the bucket: its worst case in model calls (every agent round, then the
    forced answer)."""
    return settings.max_agent_rounds + 1


def charge_question(services: AllowancePorts, user_id: str, now: float | None = None) -> None:
    """Take one question's worst case from `user_id`'s allowance, before any model is called; QuotaExceeded
    (429 with Retry-After) when the bucket does not hold it. Nothing is taken when allowances are off."""
    settings = services.allowance_settings
    if settings.chat_allowance_model_calls <= 0:
        return
    try:
        grant = services.allowances.take(user_id, question_cost(settings), time.time() if now is None else now)
    except Exception as exc:  # a store that cannot be reached is the memory's outage (503), not a server error
        from worldmm.faults import memory_unreachable

        if memory_unreachable(exc):
            raise MemoryUnavailableError() from exc
        raise
    if not grant.granted:
        logger.info(
            "question refused: allowance used up",
            extra={"step": "allowance.refused", "retry_after_s": grant.retry_after_s},
        )
        raise QuotaExceeded(
            f"You have asked more questions than your allowance holds ({settings.chat_allowance_model_calls} "
            f"model calls, {settings.chat_allowance_model_calls_per_hour} more each hour; a question counts "
            f"{question_cost(settings)}). Try again in {grant.retry_after_s} s.",
            retry_after_s=grant.retry_after_s,
        )
