"""Semantic triples (spec 001 "Episodic vs Semantic Triples"): long-term patterns from 10 min summaries.

Only the summary text is read (never the episodic triples). The answer is parsed like an episodic one:
each item validated on its own, capped, fields cut; a bad answer yields no triples and a warning.
"""

from __future__ import annotations

from pydantic import BaseModel

from worldmm.config import Settings
from worldmm.llm.port import LLM, LLMResponse
from worldmm.llm.structured import build_request
from worldmm.memory.openie import ExtractedTriple, parse_triples

SEMANTIC_PURPOSE = "semantic_triples"


class SemanticTriplesResult(BaseModel):
    """The semantic_triples prompt's answer."""

    triples: list[tuple[str, str, str]]


def extract_semantic_triples(
    llm: LLM, settings: Settings, summary: str
) -> tuple[list[ExtractedTriple], list[str], LLMResponse]:
    """Habits, preferences and relationships stated or implied by `summary`: triples, warnings, response."""
    request = build_request(
        SEMANTIC_PURPOSE,
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=SemanticTriplesResult,
        text=summary[: settings.ingest_max_input_chars],
        max_triples=settings.max_triples_per_window,
    )
    response = llm.complete(request)
    # An unusable answer raises (the summary is marked failed and retried), never "no habits found".
    triples, warnings = parse_triples(
        response.text, settings.max_triples_per_window, settings.max_field_chars, strict=True
    )
    return triples, warnings, response
