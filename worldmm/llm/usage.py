"""Cost accounting: one `worldmm_llm_usage` row per model call."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from worldmm.db.models import LLMUsage
from worldmm.llm.port import LLMResponse


def record_usage(
    session: Session, user_id: str, segment_id: uuid.UUID | None, purpose: str, response: LLMResponse
) -> None:
    """Add the usage row of one model call to `session` (the caller's unit of work commits it)."""
    session.add(LLMUsage(**_row(user_id, segment_id, purpose, response)))


def _row(user_id: str, segment_id: uuid.UUID | None, purpose: str, response: LLMResponse) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "segment_id": segment_id,
        "purpose": purpose[:64],
        "model": response.model[:256],
        "prompt_tokens": response.prompt_tokens,
        "completion_tokens": response.completion_tokens,
        "latency_ms": response.latency_ms,
    }


@dataclass
class UsageLog:
    """Model calls made outside a transaction, written later in one (calls are never made inside one)."""

    entries: list[tuple[str, LLMResponse]] = field(default_factory=list)

    def add(self, purpose: str, response: LLMResponse) -> None:
        self.entries.append((purpose, response))

    def flush(self, session: Session, user_id: str, segment_id: uuid.UUID | None) -> int:
        """Write every pending entry into `session` (one statement); returns how many were written."""
        count = len(self.entries)
        if count:
            session.execute(insert(LLMUsage), [_row(user_id, segment_id, p, r) for p, r in self.entries])
        self.entries.clear()
        return count
