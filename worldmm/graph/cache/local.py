"""The graph cache without Redis: each process keeps graphs in memory.

It revalidates them against the generation PostgreSQL stores per user, memory type and scale
(`worldmm_graph_generations`, bumped by triggers in the transaction that writes triples): one indexed read
per query, so a warm chat container sees triples another process ingested (spec 001).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from worldmm.db.models import MemoryType
from worldmm.graph.build import GraphKey, UserGraph
from worldmm.graph.cache.keys import (
    GenerationReader,
    GraphBuilder,
    GraphLRU,
    graph_keys,
    is_user_key,
    snapshot_key,
    type_prefix,
)
from worldmm.scale import SCALES


class LocalGraphCache:
    """In-process LRU (no Redis), revalidated per query against the generation stored in PostgreSQL.

    `generation` reads that stored generation; without it (unit tests) only this process's own
    invalidations are seen.
    """

    def __init__(
        self,
        capacity: int = 64,
        generation: GenerationReader | None = None,
        scales: tuple[int, ...] = SCALES,
    ) -> None:
        self._lru = GraphLRU(capacity)
        self._read_generation = generation
        self._scales = scales
        self._generations: dict[str, int] = {}
        self._lock = threading.Lock()

    def _local_generation(self, key: GraphKey) -> tuple[int, int]:
        prefix = type_prefix(key.user_id, key.memory_type)
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
        prefix = type_prefix(user_id, memory_type)
        bump = [prefix] if scales is None else graph_keys(user_id, memory_type, scales, self._scales)
        with self._lock:
            for name in bump:
                self._generations[name] = self._generations.get(name, 0) + 1
        if scales is None:
            self._lru.drop_prefix(prefix)
        else:
            self._lru.drop(bump)

    def load_snapshot(self, user_id: str, name: str, generation: int) -> bytes | memoryview | None:
        snapshot_key(user_id, name)  # the same names as Redis, so a new one is caught without Redis too
        return None  # one process: its own in-memory caches are all there is

    def save_snapshot(self, user_id: str, name: str, generation: int, blob: bytes) -> None:
        snapshot_key(user_id, name)
        return None

    def erase_user(self, user_id: str) -> dict[str, int]:
        """Drop this process's graphs of the user (nothing is kept elsewhere: no store loses an item). Their
        generations move on first, so a build in flight is not cached either."""
        with self._lock:
            for memory_type in MemoryType:
                prefix = type_prefix(user_id, memory_type)
                self._generations[prefix] = self._generations.get(prefix, 0) + 1
        self._lru.drop_matching(lambda key: is_user_key(key, user_id))
        return {}
