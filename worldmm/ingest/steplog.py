"""Spec 000's structured log steps: one Powertools logger record per step key, with its fields."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from worldmm.crashpoints import crash_point

FLOW = "ingest_window"


def log_step(logger: Logger, step: str, *, level: str = "info", **fields: Any) -> None:
    """Emit step `step` (the message and the `step` key) with `fields`, tagged with the ingest flow; each
    step is also a crash point (worldmm.crashpoints)."""
    extra = {"flow": FLOW, "step": step, **fields}
    getattr(logger, level)(step, extra=extra)
    crash_point(f"ingest.{step}")
