"""The graph cache port: a user's compact graphs kept between queries, invalidated per user and type.

Two adapters (spec 001 "Graph Caching"): `RedisGraphCache` (worldmm.graph.cache.redis) when REDIS_URL is set,
shared by every process; else `LocalGraphCache` (worldmm.graph.cache.local), an in-process LRU revalidated
per query against the generation PostgreSQL stores. Their key grammar lives in worldmm.graph.cache.keys;
one contract suite (tests/integration/test_graph_cache_contract.py) runs against both, and
tests/integration/test_erase_user_contract.py their erase.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from worldmm.db.models import MemoryType
from worldmm.graph.build import GraphKey, UserGraph
from worldmm.graph.cache.keys import (
    GENERATION_COUNTER_KEY,
    SNAPSHOT_NAMES,
    USER_KEY_REST,
    GenerationReader,
    GraphBuilder,
)

if TYPE_CHECKING:
    from worldmm.config import Settings
    from worldmm.db.engine import Database

__all__ = [
    "GENERATION_COUNTER_KEY",
    "SNAPSHOT_NAMES",
    "USER_KEY_REST",
    "GenerationReader",
    "GraphBuilder",
    "GraphCache",
    "GraphPorts",
    "build_graph_cache",
    "load_graph",
    "stored_generation",
]


class GraphPorts(Protocol):
    """The ports loading a graph uses: the cache, and the database it is built from on a miss."""

    @property
    def db(self) -> Database: ...

    @property
    def graph_cache(self) -> GraphCache: ...


class GraphCache(Protocol):
    """Where built graphs are kept between queries."""

    def get_or_build(self, key: GraphKey, build: GraphBuilder) -> UserGraph:
        """The cached graph for `key`, or `build()`'s result (cached unless invalidated meanwhile)."""
        ...

    def invalidate(self, user_id: str, memory_type: MemoryType | str, scales: Iterable[int] | None = None) -> None:
        """Forget this user's graphs of this memory type (episodic: `scales`, or every scale); others stay."""
        ...

    def load_snapshot(self, user_id: str, name: str, generation: int) -> bytes | memoryview | None:
        """Another per-user index's snapshot (e.g. "lexical") stored at exactly `generation`, or None.

        Best effort: an adapter that shares nothing between processes always misses. A name outside
        `SNAPSHOT_NAMES` raises ValueError.
        """
        ...

    def save_snapshot(self, user_id: str, name: str, generation: int, blob: bytes) -> None:
        """Keep `blob` as the user's `name` snapshot at `generation` for other processes (best effort).

        A name outside `SNAPSHOT_NAMES` raises ValueError (forget-me would not know to erase it).
        """
        ...

    def erase_user(self, user_id: str) -> dict[str, int]:
        """Erase every key of `user_id` (graphs, generations, snapshots), exactly theirs, and drop this process's
        copies (forget-me, span forget); how many went, per store of the forget audit. Unlike the best-effort
        methods above, an unreachable cache raises: the erase must not be reported done."""
        ...


def build_graph_cache(settings: Settings, generation: GenerationReader | None = None) -> GraphCache:
    """Redis when REDIS_URL is set, else an in-process LRU checked against `generation` (the database's)."""
    if settings.redis_url:
        from worldmm.graph.cache.redis import RedisGraphCache

        return RedisGraphCache.from_url(settings.redis_url, settings)
    from worldmm.graph.cache.local import LocalGraphCache

    return LocalGraphCache(settings.graph_cache_local_entries, generation)


def stored_generation(db: Database, key: GraphKey) -> int:
    """The generation PostgreSQL holds for this graph (0 before its first triple write)."""
    from worldmm.db.queries.graph_cache import graph_generation

    with db.unit_of_work(key.user_id) as session:
        return graph_generation(session, key.user_id, key.memory_type.value, key.scale or 0)


def load_graph(services: GraphPorts, key: GraphKey) -> UserGraph:
    """The user's graph for `key`: from the cache, else built from the database (and cached)."""
    from worldmm.graph.build import build_graph

    return services.graph_cache.get_or_build(key, lambda: build_graph(services.db, key))
