"""What the graph cache adapters share: the per-user Redis key grammar and a small thread-safe LRU.

Every key a graph cache keeps for a user lives under `worldmm:graph:{user_id}:` (forget-me erases by it).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable

from worldmm.db.models import MemoryType
from worldmm.graph.build import GraphKey, UserGraph

GraphBuilder = Callable[[], UserGraph]
GenerationReader = Callable[[GraphKey], int]

GENERATION_COUNTER_KEY = "worldmm:graph-generation"
"""One counter shared by all users from which Redis generations are drawn (never reused)."""

SNAPSHOT_NAMES = ("lexical",)
"""The other per-user indexes kept beside the graphs (`save_snapshot`)."""

USER_KEY_REST = re.compile(rf"^(semantic|episodic(:\d+)?|{'|'.join(SNAPSHOT_NAMES)})(:gen)?$")
"""Every key this cache keeps for a user is `worldmm:graph:{user_id}:` + a rest matching this: graphs, their
generations and the snapshots. Exact, because a user id may itself contain ':' (forget-me erases by it)."""


def user_prefix(user_id: str) -> str:
    """The namespace of every key the cache keeps for `user_id` (a longer id may share it: see `is_user_key`)."""
    return f"worldmm:graph:{user_id}:"


def is_user_key(key: str, user_id: str) -> bool:
    """Whether `key` is one of `user_id`'s keys exactly (not one of user `{user_id}:x`'s)."""
    prefix = user_prefix(user_id)
    return key.startswith(prefix) and USER_KEY_REST.match(key[len(prefix) :]) is not None


def type_prefix(user_id: str, memory_type: MemoryType | str) -> str:
    """The key prefix of all of a user's graphs of one memory type."""
    return f"worldmm:graph:{user_id}:{MemoryType(memory_type).value}"


def graph_keys(
    user_id: str, memory_type: MemoryType | str, scales: Iterable[int] | None, all_scales: Iterable[int]
) -> list[str]:
    """The graph keys an invalidation touches: the semantic graph, or the named (default: all) episodic scales."""
    memory_type = MemoryType(memory_type)
    if memory_type == MemoryType.SEMANTIC:
        return [GraphKey(user_id, memory_type).redis_key]
    return [GraphKey(user_id, memory_type, scale).redis_key for scale in (all_scales if scales is None else scales)]


def snapshot_key(user_id: str, name: str) -> str:
    """Inside the user's graph namespace (`worldmm:graph:{user_id}:`), which forget-me erases."""
    if name not in SNAPSHOT_NAMES:
        raise ValueError(f"unknown snapshot {name!r}: add it to SNAPSHOT_NAMES so forget-me erases it")
    return f"worldmm:graph:{user_id}:{name}"


class GraphLRU:
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

    def drop_matching(self, match: Callable[[str], bool]) -> int:
        """Drop every entry whose key `match`es; how many went."""
        with self._lock:
            gone = [k for k in self._items if match(k)]
            for key in gone:
                del self._items[key]
            return len(gone)
