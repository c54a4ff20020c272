"""Semantic triples (spec 001 "Episodic vs Semantic Triples"): long-term patterns from 10 min summaries.

Only the summary text is read (never the episodic triples). The answer is parsed like an episodic one:
each item validated on its own, capped, fields cut; a bad answer yields no triples and a warning.
"""

from __future__ import annotations

from pydantic import BaseModel

from worldmm.llm.port import LLM, LLMResponse
from worldmm.memory.openie import ExtractedTriple, ask_for_triples
from worldmm.memory.settings import MemorySettings

SEMANTIC_PURPOSE = "semantic_triples"


class SemanticTriplesResult(BaseModel):
    """The semantic_triples prompt's answer."""

    triples: list[tuple[str, str, str]]


def extract_semantic_triples(
    llm: LLM, settings: MemorySettings, summary: str
) -> tuple[list[ExtractedTriple], list[str], LLMResponse]:
    """Habits, preferences and relationships stated or implied by `summary`: triples, warnings, response."""
    return ask_for_triples(llm, settings, SEMANTIC_PURPOSE, SemanticTriplesResult, summary)
