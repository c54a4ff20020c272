"""The extraction port: every structured reading of text that memory construction needs.

Entities and episodic triples from a caption or summary, entities of a query, semantic triples of a
10 min summary, and the two judgements entity resolution and consolidation ask for. Two adapters:
`LLMExtractor` (the prompts, for capable models and the aws profile) and `SpacyExtractor`
(`spacy_extractor.py`: a registry-shipped spaCy pipeline, fast and deterministic, for the local
profile). `build_extractor` chooses from Settings (EXTRACTION_PROVIDER).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from worldmm.config import ExtractionProvider
from worldmm.memory.openie import ExtractedTriple, Extraction, extract_entities, extract_triples

if TYPE_CHECKING:
    from worldmm.llm.port import LLM, LLMResponse
    from worldmm.llm.usage import UsageLog
    from worldmm.memory.entities import Candidate
    from worldmm.memory.semantic.consolidation import CandidateTriple, Decision
    from worldmm.memory.settings import MemorySettings


class Extractor(Protocol):
    """Text → entities and triples; plus same-entity and consolidation judgements.

    Model calls an adapter makes are added to `usage` (when given) for the caller to record.
    """

    @property
    def model_id(self) -> str: ...

    def extract(self, text: str, usage: UsageLog | None = None) -> Extraction:
        """Entities and episodic triples of one caption or summary."""
        ...

    def extract_many(self, texts: Sequence[str], usage: UsageLog | None = None) -> list[Extraction]:
        """`extract` over many texts, in order (batched where the adapter can)."""
        ...

    def entities(self, text: str, usage: UsageLog | None = None) -> list[str]:
        """The entities a short text (a question) mentions."""
        ...

    def semantic_triples(self, summary: str, usage: UsageLog | None = None) -> Extraction:
        """Long-term facts (habits, preferences, relationships) from a 10 min summary."""
        ...

    def confirm_same(
        self, candidates: Sequence[Candidate], context: str, usage: UsageLog | None = None
    ) -> set[str]:
        """The surface forms among `candidates` that name the same entity as their nearest canonical."""
        ...

    def decide(
        self, new: ExtractedTriple, candidates: list[CandidateTriple]
    ) -> tuple[Decision, LLMResponse | None]:
        """What a new semantic triple does to memory given its similar candidates."""
        ...


class LLMExtractor:
    """The extraction prompts (ner, episodic_triples, semantic_triples, entity_confirm, consolidation)."""

    def __init__(self, llm: LLM, settings: MemorySettings) -> None:
        self.llm = llm
        self.settings = settings

    @property
    def model_id(self) -> str:
        return self.settings.extraction_model

    def extract(self, text: str, usage: UsageLog | None = None) -> Extraction:
        entities, ner_warnings, ner_response = extract_entities(self.llm, self.settings, text)
        if usage is not None:
            usage.add("ner", ner_response)
        triples, triple_warnings, triple_response = extract_triples(self.llm, self.settings, text, entities)
        if usage is not None:
            usage.add("episodic_triples", triple_response)
        return Extraction(entities, triples, ner_warnings + triple_warnings)

    def extract_many(self, texts: Sequence[str], usage: UsageLog | None = None) -> list[Extraction]:
        return [self.extract(text, usage) for text in texts]

    def entities(self, text: str, usage: UsageLog | None = None) -> list[str]:
        entities, _warnings, response = extract_entities(self.llm, self.settings, text)
        if usage is not None:
            usage.add("ner", response)
        return entities

    def semantic_triples(self, summary: str, usage: UsageLog | None = None) -> Extraction:
        from worldmm.memory.semantic.extraction import SEMANTIC_PURPOSE, extract_semantic_triples

        triples, warnings, response = extract_semantic_triples(self.llm, self.settings, summary)
        if usage is not None:
            usage.add(SEMANTIC_PURPOSE, response)
        return Extraction([], triples, warnings)

    def confirm_same(
        self, candidates: Sequence[Candidate], context: str, usage: UsageLog | None = None
    ) -> set[str]:
        from worldmm.memory.entities import confirm_candidates

        return confirm_candidates(self.llm, self.settings, list(candidates), context, usage)

    def decide(
        self, new: ExtractedTriple, candidates: list[CandidateTriple]
    ) -> tuple[Decision, LLMResponse | None]:
        from worldmm.memory.semantic.consolidation import decide

        return decide(self.llm, self.settings, new, candidates)


def build_extractor(settings: MemorySettings, llm: Callable[[], LLM]) -> Extractor:
    """The extractor the settings name (EXTRACTION_PROVIDER, see `Settings.extraction_backend`).

    `llm` is called only when the LLM adapter is chosen, so the spaCy path never loads a model it skips.
    """
    if settings.extraction_backend == ExtractionProvider.SPACY:
        from worldmm.memory.episodic.spacy_extractor import SpacyExtractor

        return SpacyExtractor(settings)
    return LLMExtractor(llm(), settings)
