"""The composition root: the one place adapters are chosen, a container of ports built lazily from Settings.

Only the edges import it — the Lambda handlers (`handlers/`), the CLI and
the demo; they build the ports once per process and hand each core function the ports it uses (core
modules name what they need as narrow Protocols, which this container satisfies). `make lint` checks the
layering with import-linter (pyproject.toml).

Tests construct `Services(settings, llm=ScriptedLLM(...), ...)` to put real or scripted parts in;
anything not given is built from settings on first use, so a Lambda pays only for what it touches.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from aws_lambda_powertools import Logger

from worldmm.allowance.settings import AllowanceSettings
from worldmm.capture.settings import CaptureSettings
from worldmm.chat.settings import ChatSettings
from worldmm.config import ComponentSettings, Profile, Settings, get_settings
from worldmm.gpu.settings import GpuSettings
from worldmm.ingest.settings import IngestSettings
from worldmm.memory.settings import MemorySettings
from worldmm.retrieval.settings import RetrievalSettings
from worldmm.timeline.settings import TimelineSettings

C = TypeVar("C", bound=ComponentSettings)
_BUILT_SETTINGS = "_component_settings"  # (the Settings they came from, component settings by kind)

EMBEDDING_CACHE_ENTRIES = 4096
"""Texts whose vectors a process keeps (6 MB at 384 dimensions, 25 MB at 1,536)."""

if TYPE_CHECKING:
    from worldmm.allowance.port import Allowances
    from worldmm.capture.port import CaptureStatePort
    from worldmm.capture.service import CaptureService
    from worldmm.cells.move import CellMover
    from worldmm.cells.records import CellRecords, NoCellRecords
    from worldmm.cells.router import CellRouter
    from worldmm.chat.port import ChatRepository
    from worldmm.db.engine import Database
    from worldmm.events.port import EventPublisher
    from worldmm.gpu.controller import GpuController
    from worldmm.gpu.demand import GpuDemand
    from worldmm.graph.cache.port import GraphCache
    from worldmm.ingest.catalog.port import SessionCatalog
    from worldmm.ingest.invoker.port import FunctionInvoker
    from worldmm.llm.call_times import CallTimes
    from worldmm.llm.port import LLM
    from worldmm.media.objects import ErasableObjectStore
    from worldmm.media.transcription.port import Transcriber
    from worldmm.memory.embedding.port import TextEmbedder
    from worldmm.memory.episodic.extractor import Extractor
    from worldmm.memory.episodic.summarizer import Summarizer
    from worldmm.memory.visual.port import VisualEncoder
    from worldmm.timeline.corrections import EntityCorrections
    from worldmm.timeline.service import MemoryService


class _ComponentSettings(Generic[C]):
    """A port of `Services`: one component's settings, as `Services.settings_of` builds them."""

    def __init__(self, component: type[C]) -> None:
        self.component = component

    @overload
    def __get__(self, services: None, owner: type[Services]) -> _ComponentSettings[C]: ...

    @overload
    def __get__(self, services: Services, owner: type[Services]) -> C: ...

    def __get__(self, services: Services | None, owner: type[Services]) -> C | _ComponentSettings[C]:
        return self if services is None else services.settings_of(self.component)


class Services:
    """Ports for one process; pass overrides as keyword arguments."""

    def __init__(self, settings: Settings | None = None, **overrides: Any) -> None:
        self.settings = settings or get_settings()
        for name, value in overrides.items():
            if name not in _PORTS:
                raise TypeError(f"unknown service {name!r}")
            self.__dict__[name] = value  # seeds the cached_property

    def settings_of(self, component: type[C]) -> C:
        """A component's settings, frozen and built once per kind: the component reads no other. The components
        below the root are given theirs as the ports below; the local gateway, above it, asks by kind."""
        source, built = self.__dict__.get(_BUILT_SETTINGS, (None, {}))
        if source is not self.settings:  # new settings (a test's): what was built from the old ones goes
            source, built = self.settings, {}
            self.__dict__[_BUILT_SETTINGS] = (source, built)
        if component not in built:
            built[component] = component.of(self.settings)
        return cast("C", built[component])

    retrieval_settings = _ComponentSettings(RetrievalSettings)
    capture_settings = _ComponentSettings(CaptureSettings)
    ingest_settings = _ComponentSettings(IngestSettings)
    chat_settings = _ComponentSettings(ChatSettings)
    gpu_settings = _ComponentSettings(GpuSettings)
    memory_settings = _ComponentSettings(MemorySettings)
    allowance_settings = _ComponentSettings(AllowanceSettings)
    timeline_settings = _ComponentSettings(TimelineSettings)

    @cached_property
    def db(self) -> Database:
        """The database: DATABASE_URL's or the secret's; with cells, the user's (`for_user`) and no other."""
        from worldmm.db.engine import get_database

        if self.cells is not None:
            user_id = self.__dict__.get(_CELL_USER)
            if user_id is None:
                from worldmm.errors import ConfigurationError

                raise ConfigurationError("with two or more database cells, resolve the user's cell: for_user(user)")
            return self.cells.database_for(user_id)  # once: cached on these ports
        return get_database(self.settings)

    @cached_property
    def cells(self) -> CellRouter | None:
        """The database cells and the placement map (DynamoDB in aws, the first cell's table locally); None
        for a deployment of one cell, which has no map."""
        cells = self.settings.database_cells
        if len(cells) < 2:
            return None
        from worldmm.cells.router import CellRouter, cell_url
        from worldmm.config import CellSettings
        from worldmm.db.engine import get_database

        def database(cell: CellSettings) -> Database:
            return get_database(self.settings, cell_url(self.settings, cell), fenced=True, prepare=not cell.proxy_host)

        if self.settings.worldmm_profile == Profile.AWS:
            from worldmm.cells.dynamo import DynamoPlacementMap

            return CellRouter(cells, DynamoPlacementMap(self.settings.placements_table), database)
        from worldmm.cells.postgres import PostgresPlacementMap

        return CellRouter(cells, PostgresPlacementMap(database(cells[0])), database)

    @cached_property
    def placement(self) -> CellRecords | NoCellRecords:
        """Where the deployment records which cell holds a user (the placement map, the cells' departure
        records): forget-me erases it last; the reaper prunes the departure records no function needs."""
        from worldmm.cells.records import CellRecords, NoCellRecords

        if self.cells is None:
            return NoCellRecords()
        return CellRecords(self.cells, self.settings.cell_departure_keep_s)

    def for_user(self, user_id: str) -> Services:
        """These ports with every connection going to `user_id`'s database cell: what a function invocation
        for one user works with. The cell is resolved once, when the invocation first reaches the database
        (`db`): a function whose stores of this user are all elsewhere (aws: the chat list and messages, in
        DynamoDB) never reads the placement map or opens a connection. One cell: `self`."""
        if self.cells is None or self.__dict__.get(_CELL_USER) == user_id:
            return self
        routed = copy.copy(self)
        for built_on_db in ("db", *_BUILT_ON_DB):  # rebuilt on first use, over the user's cell
            routed.__dict__.pop(built_on_db, None)
        routed.__dict__[_CELL_USER] = user_id
        return routed

    def every_cell(self) -> list[Services]:
        """These ports once per database cell (sweeps over every user: the reaper)."""
        if self.cells is None:
            return [self]
        return [self._on_database(self.cells.database(cell_id)) for cell_id in self.cells.cells]

    def cell_mover(self) -> CellMover:
        """The operator's mover (`worldmm cells move`): every cell as its owner (databaseAdminUrl), the
        placement map with the right to change a placement, and the graph cache to drop a moved user's keys."""
        from worldmm.cells.move import CellMover, owner_databases
        from worldmm.errors import ConfigurationError

        router = self.cells
        if router is None:
            raise ConfigurationError("moving a user needs two or more DATABASE_CELLS")
        owners = owner_databases(router.cells.values())
        placements = router.placements
        if self.settings.worldmm_profile != Profile.AWS:
            from worldmm.cells.postgres import PostgresPlacementMap

            first = next(iter(router.cells))
            placements = PostgresPlacementMap(router.database(first), owners[first])

        def erase_cached(user_id: str) -> None:
            self.graph_cache.erase_user(user_id)

        return CellMover(placements, owners, erase_cached=erase_cached)

    def _on_database(self, db: Database) -> Services:
        if self.__dict__.get("db") is db:
            return self
        routed = copy.copy(self)
        for built_on_db in _BUILT_ON_DB:  # rebuilt on first use, over the cell's database
            routed.__dict__.pop(built_on_db, None)
        routed.__dict__["db"] = db
        return routed

    @cached_property
    def store(self) -> ErasableObjectStore:
        from worldmm.media.objects import DirectoryObjectStore, S3ObjectStore

        if self.settings.worldmm_profile == Profile.AWS:
            return S3ObjectStore(self.settings.frames_bucket)
        return DirectoryObjectStore(self.settings.worldmm_home / "objects")

    @cached_property
    def sessions(self) -> SessionCatalog:
        """The session catalog: the sessions table in aws, the object store's metadata.json locally."""
        if self.settings.worldmm_profile == Profile.AWS:
            from worldmm.ingest.catalog.dynamo import DynamoSessionCatalog

            return DynamoSessionCatalog(self.settings.sessions_table)
        from worldmm.ingest.catalog.local import StoreSessionCatalog

        return StoreSessionCatalog(self.store)

    @cached_property
    def llm(self) -> LLM:
        from worldmm.llm.client import build_llm

        return build_llm(self.settings, gpu_url=self.gpu_url)

    @cached_property
    def reader_llm(self) -> LLM:
        """The local reader's model: its own GGUF beside the small local LLM when one is installed, else `llm`."""
        if self.settings.llm_provider.lower() != "local":
            return self.llm
        from worldmm.llm.local import LlamaCppLLM, default_reader_gguf

        path = self.settings.local_reader_gguf or default_reader_gguf()
        if path is None:
            return self.llm
        return LlamaCppLLM(path, n_ctx=2048, n_threads=self.settings.local_llm_threads)

    @cached_property
    def reader_call_times(self) -> CallTimes:
        """How long the reader's model calls took lately: which of them still fit an answer's deadline (a kind
        not made yet is expected to take half the answer's budget)."""
        from worldmm.llm.call_times import CallTimes

        return CallTimes(unseen_s=self.settings.answer_budget_s / 2)

    @cached_property
    def embedder(self) -> TextEmbedder:
        """The settings' embedder behind a bounded cache: a question's candidate sentences are mostly the same
        memory sentences the previous questions ranked, and are embedded once per process."""
        from worldmm.memory.embedding.port import CachingEmbedder
        from worldmm.memory.embedding.providers import build_text_embedder

        return CachingEmbedder(build_text_embedder(self.settings), max_entries=EMBEDDING_CACHE_ENTRIES)

    @cached_property
    def extractor(self) -> Extractor:
        from worldmm.memory.episodic.extractor import build_extractor

        return build_extractor(self.memory_settings, lambda: self.llm)

    @cached_property
    def summarizer(self) -> Summarizer:
        from worldmm.memory.episodic.summarizer import build_summarizer

        return build_summarizer(self.memory_settings, lambda: self.llm, lambda: self.reader_llm)

    @cached_property
    def transcriber(self) -> Transcriber:
        from worldmm.media.transcription.providers import build_transcriber

        return build_transcriber(self.settings)

    @cached_property
    def visual(self) -> VisualEncoder:
        from worldmm.memory.visual.vlm2vec import build_visual_encoder

        return build_visual_encoder(self.settings, gpu_url=self.gpu_url)

    @cached_property
    def invoker(self) -> FunctionInvoker:
        if self.settings.worldmm_profile == Profile.AWS:
            from worldmm.ingest.invoker.aws_lambda import LambdaInvoker

            return LambdaInvoker()
        from worldmm.ingest.invoker.local import InProcessInvoker

        return InProcessInvoker(local_handlers(self))

    @cached_property
    def graph_cache(self) -> GraphCache:
        from worldmm.graph.cache.port import build_graph_cache, stored_generation

        return build_graph_cache(self.settings, generation=lambda key: stored_generation(self.db, key))

    @cached_property
    def chats(self) -> ChatRepository:
        """DynamoDB in the aws profile, PostgreSQL (the same database as the memory) locally."""
        if self.settings.worldmm_profile == Profile.AWS:
            from worldmm.chat.dynamo import DynamoChatRepository

            return DynamoChatRepository(self.chat_settings)
        from worldmm.chat.postgres import PostgresChatRepository

        return PostgresChatRepository(self.chat_settings, self.db)

    @cached_property
    def allowances(self) -> Allowances:
        """Each user's token bucket of model calls: DynamoDB in aws, PostgreSQL (the memory database) locally."""
        from worldmm.allowance.port import Bucket

        bucket = Bucket(
            float(self.settings.chat_allowance_model_calls), float(self.settings.chat_allowance_model_calls_per_hour)
        )
        if self.settings.worldmm_profile == Profile.AWS:
            from worldmm.allowance.dynamo import DynamoAllowances

            return DynamoAllowances(self.settings.allowances_table, bucket)
        from worldmm.allowance.postgres import PostgresAllowances

        return PostgresAllowances(self.db, bucket)

    @cached_property
    def memories(self) -> MemoryService:
        """The caller's memories as they can see them (timeline, one memory, a session's ingest status)."""
        from worldmm.timeline.service import MemoryService

        def gpu_waiting() -> bool:
            return self.ingest_settings.gpu_required and self.gpu_url() is None

        return MemoryService(self.timeline_settings, self.db, self.store, self.sessions, gpu_waiting)

    @cached_property
    def corrections(self) -> EntityCorrections:
        """Renames and merges of the caller's entities; a merge drops their cached graphs."""
        from worldmm.db.models import MemoryType
        from worldmm.timeline.corrections import EntityCorrections

        def invalidate(user_id: str) -> None:
            try:
                for memory_type in (MemoryType.EPISODIC, MemoryType.SEMANTIC):
                    self.graph_cache.invalidate(user_id, memory_type)
            except Exception as exc:  # the generations bumped with the merge retire them where this failed
                _logger.warning("graph_invalidation_failed", extra={"user_id": user_id, "error": str(exc)})

        return EntityCorrections(self.db, invalidate)

    @cached_property
    def capture(self) -> CaptureService:
        """Capture on the deployment's bucket (`worldmm serve` signs uploads for itself: gateway/app.py)."""
        from worldmm.capture.service import build_capture_service

        return build_capture_service(self.capture_settings, self.capture_state, self.invoker)

    @cached_property
    def capture_state(self) -> CaptureStatePort:
        """Capture's sessions and window buffers: DynamoDB in aws, the object store + this process locally."""
        if self.settings.worldmm_profile == Profile.AWS:
            from worldmm.capture.dynamo import CaptureStore

            return CaptureStore(
                self.settings.sessions_table,
                self.settings.capture_windows_table,
                open_shards=self.settings.capture_open_shards,
            )
        from worldmm.capture.local import LocalCaptureStore

        return LocalCaptureStore(self.store)

    @cached_property
    def event_publisher(self) -> EventPublisher:
        """Where committed app events go: the deployment's EventBridge bus (aws), the local SSE streams."""
        if self.settings.worldmm_profile == Profile.AWS:
            from worldmm.events.eventbridge import EventBridgePublisher

            return EventBridgePublisher(self.settings.events_bus_name)
        from worldmm.events.local import LocalEventHub

        return LocalEventHub()

    @cached_property
    def gpu_demand(self) -> GpuDemand:
        """How work asks for the GPU: the controller function (aws, discovered worker), else nobody."""
        from worldmm.gpu.demand import ControllerDemand, NoController

        if self.settings.worldmm_profile != Profile.AWS or self.settings.gpu_worker_url:
            return NoController()
        from worldmm.aws import aws_client
        from worldmm.gpu.aws import DynamoControlStore

        control = DynamoControlStore(self.gpu_settings.gpu_control_table, aws_client("dynamodb"))
        return ControllerDemand(
            control,
            self.invoker,
            self.settings.gpu_controller_function_name,
            debounce_s=self.settings.gpu_wake_debounce_s,
        )

    @cached_property
    def gpu_controller(self) -> GpuController:
        """The GPU worker's controller on the deployment's EC2, SSM, control table, DLQ and capture buffer."""
        from worldmm.gpu.aws import build_gpu_controller

        return build_gpu_controller(self.gpu_settings, self.capture_state)

    def replace(self, **overrides: Any) -> Services:
        """A Services with the same settings and the ports built so far, `overrides` put in their place."""
        built = {name: value for name, value in self.__dict__.items() if name in _PORTS}
        return Services(self.settings, **{**built, **overrides})

    def with_backfill_llm(self) -> Services:
        """The same ports with the backfill LLM (LLM_MODE=batch: shared Batch jobs; else `self`)."""
        from worldmm.llm.batch import build_backfill_llm

        llm = build_backfill_llm(self.settings, self.llm)
        if llm is self.llm:
            return self
        backfill = copy.copy(self)
        for built_on_llm in ("extractor", "summarizer"):  # rebuilt on first use, over the backfill LLM
            backfill.__dict__.pop(built_on_llm, None)
        backfill.__dict__["llm"] = llm
        return backfill

    def gpu_url(self) -> str | None:
        """The GPU worker's base URL now: GPU_WORKER_URL, else SSM/EC2 discovery (aws), else None."""
        if self.settings.gpu_worker_url:
            return self.settings.gpu_worker_url.rstrip("/")
        if self.settings.worldmm_profile != Profile.AWS:
            return None
        from worldmm.gpu.discovery import resolve_gpu_url

        return resolve_gpu_url(self.gpu_settings)

    def gpu_sentinel(self) -> str:
        """What the GPU instance parameter holds now, as written (aws; why `gpu_url` found no worker)."""
        from worldmm.gpu.discovery import gpu_sentinel

        return gpu_sentinel(self.gpu_settings)


_PORTS = {
    "db",
    "cells",
    "placement",
    "store",
    "sessions",
    "llm",
    "reader_llm",
    "embedder",
    "extractor",
    "summarizer",
    "transcriber",
    "visual",
    "invoker",
    "graph_cache",
    "chats",
    "allowances",
    "memories",
    "corrections",
    "capture",
    "capture_state",
    "gpu_demand",
    "gpu_controller",
    "event_publisher",
}

_BUILT_ON_DB = ("graph_cache", "chats", "allowances", "memories", "corrections")
"""Ports that hold the database they were built on: a Services on another cell builds its own."""

_CELL_USER = "_cell_user"
"""Where `for_user` records the user whose cell `db` resolves to (deployments of two or more cells)."""

_logger = Logger(child=True)

Handler = Callable[[dict[str, Any]], Any]


def _async_semantics(name: str, handler: Handler) -> Handler:
    """Like `InvocationType=Event`: the caller never sees the function's error; it is logged."""

    def run(payload: dict[str, Any]) -> Any:
        try:
            return handler(payload)
        except Exception:
            _logger.exception("local_invoke_failed", extra={"function": name})
            return None

    return run


def local_handlers(services: Services) -> dict[str, Handler]:
    """The local profile's function table (function name → in-process handler, for `InProcessInvoker`):
    async invokes run the same library code in this process, on `services`."""
    from worldmm.ingest.events import IngestWindowEvent, RetriggerEvent
    from worldmm.ingest.retrigger import retrigger
    from worldmm.ingest.window import ingest_window

    settings = services.settings

    def ingest(payload: dict[str, Any]) -> Any:
        event = IngestWindowEvent.model_validate(payload)
        return ingest_window(services.for_user(event.userId), event).model_dump()

    def retrigger_session(payload: dict[str, Any]) -> Any:
        event = RetriggerEvent.model_validate(payload)
        return retrigger(services.for_user(event.userId), event).model_dump()

    def forget(payload: dict[str, Any]) -> Any:
        from worldmm.forget_user import forget_user

        user_id = payload["userId"]
        by = payload.get("requestedBy") or "local"
        return forget_user(services.for_user(user_id), user_id, requested_by=by).as_dict()

    return {
        settings.ingest_function_name: _async_semantics(settings.ingest_function_name, ingest),
        settings.retrigger_function_name: _async_semantics(settings.retrigger_function_name, retrigger_session),
        settings.forget_function_name: _async_semantics(settings.forget_function_name, forget),
    }


_default: Services | None = None


def get_services() -> Services:
    """The process-wide Services (reused across warm Lambda invocations)."""
    global _default
    if _default is None:
        _default = Services()
    return _default


def set_services(services: Services | None) -> None:
    """Replace the process-wide Services (tests, the local CLI)."""
    global _default
    _default = services
