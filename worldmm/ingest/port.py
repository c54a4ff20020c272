"""The ports each write-side function uses, narrowest first; wider ones are unions of narrower ones.

Session lookups' port stays in worldmm.ingest.catalog.port; the composition root's `Services` satisfies every one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from worldmm.ingest.app_events import EventPorts
from worldmm.ingest.catalog.port import SessionPorts
from worldmm.ingest.settings import IngestSettingsPorts
from worldmm.memory.entities import EntityPorts

if TYPE_CHECKING:
    from worldmm.gpu.demand import GpuDemand
    from worldmm.graph.cache.port import GraphCache
    from worldmm.llm.port import LLM
    from worldmm.media.objects import ObjectStore
    from worldmm.media.transcription.port import Transcriber
    from worldmm.memory.episodic.extractor import Extractor
    from worldmm.memory.episodic.summarizer import Summarizer
    from worldmm.memory.visual.port import VisualEncoder


class EpisodicPorts(EntityPorts, IngestSettingsPorts, Protocol):
    """Extracting and storing episodic memories: entity resolution's ports, the whole extractor, the graph cache."""

    @property
    def extractor(self) -> Extractor: ...

    @property
    def graph_cache(self) -> GraphCache: ...


class EnrichmentPorts(EpisodicPorts, Protocol):
    """Enriching a window: the episodic ports, the captioning LLM and the visual encoder."""

    @property
    def llm(self) -> LLM: ...

    @property
    def visual(self) -> VisualEncoder: ...


class MultiscalePorts(EpisodicPorts, Protocol):
    """Closing summaries: the summarizer, and extraction and consolidation's ports."""

    @property
    def summarizer(self) -> Summarizer: ...


class TextWindowPorts(MultiscalePorts, Protocol):
    """Ingesting text windows; `replace` puts a caching embedder in for one run."""

    def replace(self, **overrides: Any) -> TextWindowPorts: ...


class WindowProcessPorts(EnrichmentPorts, Protocol):
    """Processing one window (`process_window`): enrichment's ports and the transcriber for its own audio."""

    @property
    def transcriber(self) -> Transcriber: ...


class GpuWaitPorts(IngestSettingsPorts, Protocol):
    """Waiting for the GPU worker: its address (None while there is none), the demand that starts it, and what
    the deployment's pointer to it says when there is none."""

    @property
    def gpu_demand(self) -> GpuDemand: ...

    def gpu_url(self) -> str | None: ...

    def gpu_sentinel(self) -> str: ...


class IngestSessionPorts(WindowProcessPorts, MultiscalePorts, Protocol):
    """Ingesting a recorded session: its windows, the summaries, and the backfill LLM."""

    def with_backfill_llm(self) -> IngestSessionPorts: ...


class WindowPorts(WindowProcessPorts, MultiscalePorts, EventPorts, SessionPorts, GpuWaitPorts, Protocol):
    """Ingesting one live window: its frames and audio, the window routine's ports, the GPU worker's
    address and demand, the summaries above it, and the app events it publishes."""

    @property
    def store(self) -> ObjectStore: ...
