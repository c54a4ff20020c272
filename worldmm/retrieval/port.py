"""The ports each read-side function uses, narrowest first; wider ones are unions of narrower ones.

Only type-checking imports here, so a handler importing a port pays for no retriever.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from worldmm.db.port import DatabasePorts

if TYPE_CHECKING:
    from worldmm.db.engine import Database
    from worldmm.graph.cache.port import GraphCache
    from worldmm.llm.call_times import CallTimes
    from worldmm.llm.port import LLM
    from worldmm.media.objects import ObjectStore
    from worldmm.memory.embedding.port import TextEmbedder
    from worldmm.memory.visual.port import VisualEncoder
    from worldmm.retrieval.settings import RetrievalSettings


class RetrievalSettingsPorts(Protocol):
    """The read side's settings (and no other setting)."""

    @property
    def retrieval_settings(self) -> RetrievalSettings: ...


class ComposePorts(Protocol):
    """What composing an answer uses: the database (its text-search lexemes, the citations' segments) and the
    text embedder (a sentence that answers in other words than the question's)."""

    @property
    def db(self) -> Database: ...

    @property
    def embedder(self) -> TextEmbedder: ...


class ReaderPorts(DatabasePorts, ComposePorts, RetrievalSettingsPorts, Protocol):
    """The local reader: composing's ports, the read side's settings, the model that writes the short answer and
    how long its calls have lately taken."""

    @property
    def reader_llm(self) -> LLM: ...

    @property
    def reader_call_times(self) -> CallTimes: ...


class HybridPorts(DatabasePorts, ComposePorts, RetrievalSettingsPorts, Protocol):
    """Hybrid and semantic search: the query embedder, the database, the cached lexical indexes and graphs."""

    @property
    def graph_cache(self) -> GraphCache: ...


class EpisodicRetrievalPorts(HybridPorts, Protocol):
    """Episodic retrieval: hybrid search's ports and the reranking LLM."""

    @property
    def llm(self) -> LLM: ...


class VisualRetrievalPorts(DatabasePorts, RetrievalSettingsPorts, Protocol):
    """Visual retrieval: the query encoder, the stored frames and the visual embeddings."""

    @property
    def store(self) -> ObjectStore: ...

    @property
    def visual(self) -> VisualEncoder: ...


class AgentPorts(EpisodicRetrievalPorts, VisualRetrievalPorts, ReaderPorts, Protocol):
    """Answering a question: the reasoning LLM and the three retrievers' ports."""
