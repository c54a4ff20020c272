"""Open information extraction: named entities and episodic triples from caption or summary text.

Model output is untrusted (spec 003 "Extraction Stage"): think blocks and fences are stripped, every item
is validated on its own, counts are capped, fields truncated, empty items rejected, and whatever is
valid is kept with a warning for the rest. A bad item never raises; an answer that is unusable as a whole
(unparsable, no list, cut off by the token limit) raises from the model calls (`extract_entities`,
`extract_triples`), so the window fails and is redone instead of being stored as "nothing to extract".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from worldmm.errors import ModelOutputError
from worldmm.llm.port import LLM, LLMResponse
from worldmm.llm.structured import build_request, extract_json, is_placeholder
from worldmm.memory.settings import MemorySettings

NER_PURPOSE = "ner"
TRIPLES_PURPOSE = "episodic_triples"


class NerResult(BaseModel):
    """The NER prompt's answer."""

    entities: list[str]


class TriplesResult(BaseModel):
    """The episodic-triples prompt's answer."""

    triples: list[tuple[str, str, str]]


@dataclass(frozen=True)
class ExtractedTriple:
    """One validated [subject, predicate, object]."""

    subject: str
    predicate: str
    object: str

    @property
    def text(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"


@dataclass
class Extraction:
    """What a text yielded: entities, triples, and warnings about what was dropped or cut."""

    entities: list[str] = field(default_factory=list)
    triples: list[ExtractedTriple] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


MAX_ENTITY_WORDS = 6
"""A named entity ("my blue notebook", "Corner Café on Maple Street") is short; longer is a sentence."""


def clean_field(value: Any, max_chars: int) -> str | None:
    """A string field collapsed to single spaces and cut to `max_chars`; None if absent or empty."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return None
    cleaned = " ".join(value.split())
    if is_placeholder(cleaned):
        return None
    return cleaned[:max_chars]


class UnusableAnswerError(ModelOutputError):
    """An extraction answer that is unusable as a whole: unparsable, or without the list it was asked for."""


def _items(text: str, key: str, warnings: list[str], *, strict: bool = False) -> list[Any]:
    problem: str | None = None
    try:
        value = extract_json(text)
    except ModelOutputError as exc:
        value, problem = None, f"{key}: unparsable answer ({exc})"
    if isinstance(value, dict):
        value = value.get(key)
    if problem is None and not isinstance(value, list):
        problem = f"{key}: answer has no list"
    if problem is not None:
        if strict:
            raise UnusableAnswerError(problem)
        warnings.append(problem)
        return []
    assert isinstance(value, list)
    return value


def parse_entities(
    text: str, max_entities: int, max_chars: int, *, strict: bool = False
) -> tuple[list[str], list[str]]:
    """Entities from an NER answer, deduplicated case-insensitively, capped; plus warnings.

    `strict`: an unusable answer raises UnusableAnswerError instead of being an empty list with a warning.
    """
    warnings: list[str] = []
    entities: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(_items(text, "entities", warnings, strict=strict)):
        if isinstance(item, dict):
            item = item.get("name") or item.get("entity")
        raw_len = len(item) if isinstance(item, str) else 0
        name = clean_field(item, max_chars)
        if name is None:
            warnings.append(f"entities[{i}]: empty or not a string, dropped")
            continue
        if raw_len > max_chars:
            warnings.append(f"entities[{i}]: truncated to {max_chars} chars")
        if len(name.split()) > MAX_ENTITY_WORDS:
            warnings.append(f"entities[{i}]: more than {MAX_ENTITY_WORDS} words is a sentence, not a name; dropped")
            continue
        if name.lower() in seen:
            continue
        if len(entities) >= max_entities:
            warnings.append(f"entities: capped at {max_entities}")
            break
        seen.add(name.lower())
        entities.append(name)
    return entities, warnings


def _triple_parts(item: Any) -> tuple[Any, Any, Any] | None:
    if isinstance(item, (list, tuple)) and len(item) == 3:
        return item[0], item[1], item[2]
    if isinstance(item, dict):
        s = item.get("subject", item.get("source"))
        p = item.get("predicate", item.get("relationship"))
        o = item.get("object", item.get("target"))
        return s, p, o
    return None


def parse_triples(
    text: str, max_triples: int, max_chars: int, *, strict: bool = False
) -> tuple[list[ExtractedTriple], list[str]]:
    """Triples from an answer (`[s, p, o]` lists or `{subject, predicate, object}`), validated one by one.

    `strict`: an unusable answer raises UnusableAnswerError instead of being an empty list with a warning.
    """
    warnings: list[str] = []
    triples: list[ExtractedTriple] = []
    seen: set[tuple[str, str, str]] = set()
    for i, item in enumerate(_items(text, "triples", warnings, strict=strict)):
        parts = _triple_parts(item)
        if parts is None:
            warnings.append(f"triples[{i}]: not a [subject, predicate, object], dropped")
            continue
        cleaned = [clean_field(p, max_chars) for p in parts]
        if any(c is None for c in cleaned):
            warnings.append(f"triples[{i}]: empty subject, predicate or object, dropped")
            continue
        if any(isinstance(p, str) and len(p) > max_chars for p in parts):
            warnings.append(f"triples[{i}]: field truncated to {max_chars} chars")
        s, p, o = (c for c in cleaned if c is not None)
        key = (s.lower(), p.lower(), o.lower())
        if key in seen:
            continue
        if len(triples) >= max_triples:
            warnings.append(f"triples: capped at {max_triples}")
            break
        seen.add(key)
        triples.append(ExtractedTriple(s, p, o))
    return triples, warnings


def extract_entities(llm: LLM, settings: MemorySettings, text: str) -> tuple[list[str], list[str], LLMResponse]:
    """NER over `text` (truncated to the input cap): entities, warnings, and the model's response."""
    request = build_request(
        NER_PURPOSE,
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=NerResult,
        text=text[: settings.ingest_max_input_chars],
        max_entities=settings.max_entities_per_window,
    )
    response = llm.complete(request)
    entities, warnings = parse_entities(
        response.text, settings.max_entities_per_window, settings.max_field_chars, strict=True
    )
    return entities, warnings, response


def extract_triples(
    llm: LLM, settings: MemorySettings, text: str, entities: list[str]
) -> tuple[list[ExtractedTriple], list[str], LLMResponse]:
    """Episodic triples over `text` given its entities: triples, warnings, and the model's response."""
    return ask_for_triples(llm, settings, TRIPLES_PURPOSE, TriplesResult, text, entities)


def ask_for_triples(
    llm: LLM, settings: MemorySettings, purpose: str, answer: type[BaseModel], text: str, entities: Sequence[str] = ()
) -> tuple[list[ExtractedTriple], list[str], LLMResponse]:
    """The `purpose` prompt over `text` (cut to the input cap) and the entities found in it (a prompt without an
    `$entities` place ignores them): its triples, warnings and response.

    An unusable answer raises UnusableAnswerError (the window or summary is retried), never "nothing found"."""
    request = build_request(
        purpose,
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=answer,
        text=text[: settings.ingest_max_input_chars],
        max_triples=settings.max_triples_per_window,
        entities=", ".join(entities) if entities else "(none)",
    )
    response = llm.complete(request)
    triples, warnings = parse_triples(
        response.text, settings.max_triples_per_window, settings.max_field_chars, strict=True
    )
    return triples, warnings, response
