"""The graph cache port: a user's compact graphs kept between queries, invalidated per user and type.

Redis (spec 001 "Graph Caching"): the graph lives under `worldmm:graph:{user_id}:{memory_type}`
(+ `:{scale}` for episodic) and a generation `worldmm:graph:{user_id}:{memory_type}:gen` is renewed on
every invalidation (from one counter shared by all users, so no generation is ever seen twice). A graph
is only stored if the generation did not move while it was being built, so a build racing a triple
insert never caches a stale graph. A warm process also keeps
the graphs it used in memory and revalidates them against the generation (one tiny round trip)
instead of transferring the blob again. Redis unreachable → rebuild from the database (logged).

Without Redis, each process keeps graphs in memory and revalidates them against the generation that
PostgreSQL stores per user, memory type and scale (`worldmm_graph_generations`, bumped by triggers in
the transaction that writes triples): one indexed read per query, so a warm chat container sees
triples another process ingested (spec 001).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger

from worldmm.db.models import MemoryType
from worldmm.graph.build import GraphKey, UserGraph

if TYPE_CHECKING:
    from worldmm.config import Settings
    from worldmm.db.engine import Database

logger = Logger(service="worldmm", child=True)


class GraphPorts(Protocol):
    """The ports loading a graph uses: the cache, and the database it is built from on a miss."""

    @property
    def db(self) -> Database: ...

    @property
    def graph_cache(self) -> GraphCache: ...


GraphBuilder = Callable[[], UserGraph]
GenerationReader = Callable[[GraphKey], int]


class GraphCache(Protocol):
    """Where built graphs are kept between queries."""

    def get_or_build(self, key: GraphKey, build: GraphBuilder) -> UserGraph:
        """The cached graph for `key`, or `build()`'s result (cached unless invalidated meanwhile)."""
        ...

    def invalidate(self, user_id: str, memory_type: MemoryType | str, scales: Iterable[int] | None = None) -> None:
        """Forget this user's graphs of this memory type (episodic: `scales`, or every scale); others stay."""
        ...

    def load_snapshot(self, user_id: str, name: str, generation: int) -> bytes | memoryview | None:
        """Another per-user index's snapshot (e.g. "lexical") stored at exactly `generation`, or None."""
        ...

    def save_snapshot(self, user_id: str, name: str, generation: int, blob: bytes) -> None:
        """Keep `blob` as the user's `name` snapshot at `generation` for other processes (best effort)."""
        ...


def _type_prefix(user_id: str, memory_type: MemoryType | str) -> str:
    return f"worldmm:graph:{user_id}:{MemoryType(memory_type).value}"


def _keys(
    user_id: str, memory_type: MemoryType | str, scales: Iterable[int] | None, all_scales: Iterable[int]
) -> list[str]:
    """The graph keys an invalidation touches: the semantic graph, or the named (default: all) episodic scales."""
    memory_type = MemoryType(memory_type)
    if memory_type == MemoryType.SEMANTIC:
        return [GraphKey(user_id, memory_type).redis_key]
    return [GraphKey(user_id, memory_type, scale).redis_key for scale in (all_scales if scales is None else scales)]


class _LRU:
    """A small thread-safe LRU of (generation, graph) by key; a generation is any comparable token."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._items: OrderedDict[str, tuple[Hashable, UserGraph]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[Hashable, UserGraph] | None:
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: str, generation: Hashable, graph: UserGraph) -> None:
        with self._lock:
            self._items[key] = (generation, graph)
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def drop_prefix(self, prefix: str) -> None:
        with self._lock:
            for key in [k for k in self._items if k == prefix or k.startswith(prefix + ":")]:
                del self._items[key]

    def drop(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._items.pop(key, None)


class LocalGraphCache:
    """In-process LRU (no Redis), revalidated per query against the generation stored in PostgreSQL.

    `generation` reads that stored generation; without it (unit tests) only this process's own
    invalidations are seen.
    """

    def __init__(
        self,
        capacity: int = 64,
        generation: GenerationReader | None = None,
        scales: tuple[int, ...] = (30, 180, 600, 3600),
    ) -> None:
        self._lru = _LRU(capacity)
        self._read_generation = generation
        self._scales = scales
        self._generations: dict[str, int] = {}
        self._lock = threading.Lock()

    def _local_generation(self, key: GraphKey) -> tuple[int, int]:
        prefix = _type_prefix(key.user_id, key.memory_type)
        with self._lock:
            return self._generations.get(prefix, 0), self._generations.get(key.redis_key, 0)

    def get_or_build(self, key: GraphKey, build: GraphBuilder) -> UserGraph:
        local = self._local_generation(key)
        # Read before building: a write committed after this read makes the stored graph look stale.
        stored = self._read_generation(key) if self._read_generation is not None else 0
        generation = (*local, stored)
        cached = self._lru.get(key.redis_key)
        if cached is not None and cached[0] == generation:
            return cached[1]
        graph = build()
        if self._local_generation(key) == local:
            self._lru.put(key.redis_key, generation, graph)
        return graph

    def invalidate(self, user_id: str, memory_type: MemoryType | str, scales: Iterable[int] | None = None) -> None:
        prefix = _type_prefix(user_id, memory_type)
        bump = [prefix] if scales is None else _keys(user_id, memory_type, scales, self._scales)
        with self._lock:
            for name in bump:
                self._generations[name] = self._generations.get(name, 0) + 1
        if scales is None:
            self._lru.drop_prefix(prefix)
        else:
            self._lru.drop(bump)

    def load_snapshot(self, user_id: str, name: str, generation: int) -> bytes | memoryview | None:
        return None  # one process: its own in-memory caches are all there is

    def save_snapshot(self, user_id: str, name: str, generation: int, blob: bytes) -> None:
        return None


# Store the blob only if the generation is still the one the build started from.
_PUT_IF_CURRENT = """
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if current == tonumber(ARGV[1]) then
    redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
    return 1
end
return 0
"""

# Invalidate: every named graph's generation becomes one new value of a counter shared by all users
# (kept at or above every generation ever handed out), and its blob goes. A generation is thus never
# reused, even for a user whose keys forget-me deleted and who starts again from nothing: a warm
# process can never match its in-memory copy of an erased graph. KEYS: the counter, then each graph's
# blob key followed by its generation key.
_INVALIDATE = """
local generation = redis.call('INCR', KEYS[1])
for i = 3, #KEYS, 2 do
    local current = tonumber(redis.call('GET', KEYS[i]) or '0')
    if current >= generation then generation = current + 1 end
end
redis.call('SET', KEYS[1], generation)
for i = 2, #KEYS, 2 do
    redis.call('DEL', KEYS[i])
    redis.call('SET', KEYS[i + 1], generation)
end
return generation
"""

GENERATION_COUNTER_KEY = "worldmm:graph-generation"
_GENERATION_BYTES = 8


SNAPSHOT_NAMES = ("lexical",)
"""The other per-user indexes kept beside the graphs (`save_snapshot`)."""

USER_KEY_REST = re.compile(rf"^(semantic|episodic(:\d+)?|{'|'.join(SNAPSHOT_NAMES)})(:gen)?$")
"""Every key this cache keeps for a user is `worldmm:graph:{user_id}:` + a rest matching this: graphs, their
generations and the snapshots. Exact, because a user id may itself contain ':' (forget-me erases by it)."""


def _snapshot_key(user_id: str, name: str) -> str:
    """Inside the user's graph namespace (`worldmm:graph:{user_id}:`), which forget-me erases."""
    if name not in SNAPSHOT_NAMES:
        raise ValueError(f"unknown snapshot {name!r}: add it to SNAPSHOT_NAMES so forget-me erases it")
    return f"worldmm:graph:{user_id}:{name}"


class RedisGraphCache:
    """Redis-backed cache shared by every process, with an in-process copy revalidated per query."""

    def __init__(
        self,
        client: Any,
        *,
        scales: tuple[int, ...],
        ttl_s: int = 86_400,
        local_entries: int = 8,
    ) -> None:
        self._client = client
        self._scales = scales
        self._ttl_s = ttl_s
        self._local = _LRU(local_entries)
        self._put_script = client.register_script(_PUT_IF_CURRENT)
        self._invalidate_script = client.register_script(_INVALIDATE)

    @classmethod
    def from_url(cls, url: str, settings: Settings) -> RedisGraphCache:
        import redis

        client = redis.Redis.from_url(
            url,
            socket_connect_timeout=settings.redis_timeout_s,
            socket_timeout=settings.redis_timeout_s,
        )
        return cls(
            client,
            scales=settings.scale_durations,
            ttl_s=settings.graph_cache_ttl_s,
            local_entries=settings.graph_cache_local_entries,
        )

    def get_or_build(self, key: GraphKey, build: GraphBuilder) -> UserGraph:
        from redis.exceptions import RedisError

        gen_key = key.redis_key + ":gen"
        try:
            generation = int(self._client.get(gen_key) or 0)
            local = self._local.get(key.redis_key)
            if local is not None and local[0] == generation:
                return local[1]
            blob = self._client.get(key.redis_key)
        except RedisError as exc:
            logger.warning("graph cache unavailable, rebuilding from the database: %s", exc)
            return build()
        if blob is not None:
            stored_generation = int.from_bytes(blob[:_GENERATION_BYTES], "big")
            if stored_generation == generation:
                try:
                    # A view, not a slice: the snapshot's arrays map onto the blob Redis returned.
                    graph = UserGraph.from_bytes(memoryview(blob)[_GENERATION_BYTES:])
                except (ValueError, OSError, KeyError) as exc:
                    logger.warning("unreadable cached graph %s, rebuilding: %s", key.redis_key, exc)
                else:
                    self._local.put(key.redis_key, generation, graph)
                    return graph
        graph = build()
        payload = generation.to_bytes(_GENERATION_BYTES, "big") + graph.to_bytes()
        try:
            stored = self._put_script(keys=[key.redis_key, gen_key], args=[generation, payload, self._ttl_s])
        except RedisError as exc:
            logger.warning("graph cache unavailable, graph not stored: %s", exc)
            return graph
        if stored:
            self._local.put(key.redis_key, generation, graph)
        return graph

    def load_snapshot(self, user_id: str, name: str, generation: int) -> bytes | memoryview | None:
        from redis.exceptions import RedisError

        try:
            blob = self._client.get(_snapshot_key(user_id, name))
        except RedisError as exc:
            logger.warning("snapshot cache unavailable: %s", exc)
            return None
        if blob is None or int.from_bytes(blob[:_GENERATION_BYTES], "big") != generation:
            return None
        return memoryview(blob)[_GENERATION_BYTES:]

    def save_snapshot(self, user_id: str, name: str, generation: int, blob: bytes) -> None:
        from redis.exceptions import RedisError

        try:
            payload = generation.to_bytes(_GENERATION_BYTES, "big") + blob
            self._client.set(_snapshot_key(user_id, name), payload, ex=self._ttl_s)
        except RedisError as exc:
            logger.warning("snapshot cache unavailable, %s not stored: %s", name, exc)

    def invalidate(self, user_id: str, memory_type: MemoryType | str, scales: Iterable[int] | None = None) -> None:
        from redis.exceptions import RedisError

        keys = _keys(user_id, memory_type, scales, self._scales)
        self._local.drop(keys)
        try:
            self._invalidate_script(keys=[GENERATION_COUNTER_KEY, *(k for key in keys for k in (key, key + ":gen"))])
        except RedisError as exc:
            # The cached blobs expire after the TTL; until then a stale graph may be served.
            logger.error("graph cache invalidation failed for %s: %s", keys, exc)


def build_graph_cache(settings: Settings, generation: GenerationReader | None = None) -> GraphCache:
    """Redis when REDIS_URL is set, else an in-process LRU checked against `generation` (the database's)."""
    if settings.redis_url:
        return RedisGraphCache.from_url(settings.redis_url, settings)
    return LocalGraphCache(settings.graph_cache_local_entries, generation, settings.scale_durations)


def stored_generation(db: Database, key: GraphKey) -> int:
    """The generation PostgreSQL holds for this graph (0 before its first triple write)."""
    from sqlalchemy import text

    with db.unit_of_work(key.user_id) as session:
        value = session.execute(
            text(
                "SELECT generation FROM worldmm_graph_generations WHERE user_id = :user_id "
                "AND memory_type = CAST(:memory_type AS worldmm_memory_type) AND scale = :scale"
            ),
            {"user_id": key.user_id, "memory_type": key.memory_type.value, "scale": key.scale or 0},
        ).scalar_one_or_none()
    return int(value or 0)


def load_graph(services: GraphPorts, key: GraphKey) -> UserGraph:
    """The user's graph for `key`: from the cache, else built from the database (and cached)."""
    from worldmm.graph.build import build_graph

    return services.graph_cache.get_or_build(key, lambda: build_graph(services.db, key))
