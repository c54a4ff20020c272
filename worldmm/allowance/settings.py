"""The settings charging a question reads: a user's allowance of model calls, its refill, and the agent's rounds
that make a question's worst case. Built once by the composition root (`Services.allowance_settings`)."""

from __future__ import annotations

from worldmm.config import ComponentSettings


class AllowanceSettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    chat_allowance_model_calls: int
    chat_allowance_model_calls_per_hour: int
    max_agent_rounds: int
