"""The settings building the memory reads: which extractor and summariser, the model and its token limit, how much
of a window is read and kept, spaCy's model, summary length, and how new facts are consolidated and entities
matched. Built once by the composition root (`Services.memory_settings`)."""

from __future__ import annotations

from typing import Protocol

from worldmm.config import ComponentSettings, ConsolidationMode, ExtractionProvider, SummaryProvider


class MemorySettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    extraction_backend: ExtractionProvider
    summary_backend: SummaryProvider
    extraction_model: str
    extraction_max_tokens: int
    # what is read of a window and what is kept of it
    ingest_max_input_chars: int
    max_entities_per_window: int
    max_triples_per_window: int
    max_field_chars: int
    spacy_model: str
    spacy_batch_size: int
    summary_max_chars: int
    # new facts against known ones, new names against known entities
    consolidation_mode: ConsolidationMode
    consolidation_threshold: float
    consolidation_top_k: int
    entity_match_threshold: float


class MemorySettingsPorts(Protocol):
    """The memory's settings (and no other setting)."""

    @property
    def memory_settings(self) -> MemorySettings: ...
