"""The graph cache on Redis (spec 001 "Graph Caching"), shared by every process.

The graph lives under `worldmm:graph:{user_id}:{memory_type}` (+ `:{scale}` for episodic) and a generation
`worldmm:graph:{user_id}:{memory_type}:gen` is renewed on every invalidation (from one counter shared by all
users, so no generation is ever seen twice). A graph is only stored if the generation did not move while it
was being built, so a build racing a triple insert never caches a stale graph. A warm process also keeps the
graphs it used in memory and revalidates them against the generation (one tiny round trip) instead of
transferring the blob again. Redis unreachable → rebuild from the database (logged).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from worldmm.db.models import MemoryType
from worldmm.graph.build import GraphKey, UserGraph
from worldmm.graph.cache.keys import (
    GENERATION_COUNTER_KEY,
    GraphBuilder,
    GraphLRU,
    graph_keys,
    is_user_key,
    snapshot_key,
    user_prefix,
)
from worldmm.scale import SCALES

if TYPE_CHECKING:
    from worldmm.config import Settings

logger = Logger(child=True)


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

_GENERATION_BYTES = 8


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
        self._local = GraphLRU(local_entries)
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
            scales=SCALES,
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
            blob = self._client.get(snapshot_key(user_id, name))
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
            self._client.set(snapshot_key(user_id, name), payload, ex=self._ttl_s)
        except RedisError as exc:
            logger.warning("snapshot cache unavailable, %s not stored: %s", name, exc)

    def invalidate(self, user_id: str, memory_type: MemoryType | str, scales: Iterable[int] | None = None) -> None:
        from redis.exceptions import RedisError

        keys = graph_keys(user_id, memory_type, scales, self._scales)
        self._local.drop(keys)
        try:
            self._invalidate_script(keys=[GENERATION_COUNTER_KEY, *(k for key in keys for k in (key, key + ":gen"))])
        except RedisError as exc:
            # The cached blobs expire after the TTL; until then a stale graph may be served.
            logger.error("graph cache invalidation failed for %s: %s", keys, exc)

    def erase_user(self, user_id: str) -> dict[str, int]:
        """Every key of the user's namespace that is exactly theirs (a key of user `a:b` is not user `a`'s),
        in batches of 500; Redis errors propagate."""
        keys = self.user_keys(user_id)
        for start in range(0, len(keys), 500):
            self._client.delete(*keys[start : start + 500])
        self._local.drop_matching(lambda key: is_user_key(key, user_id))
        return {"redis.keys": len(keys)}

    def user_keys(self, user_id: str) -> list[bytes]:
        """The user's keys in Redis (graphs, generations, snapshots), exactly."""
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", user_prefix(user_id)) + "*"
        keys: list[bytes] = []
        for key in self._client.scan_iter(match=pattern, count=500):
            raw = key if isinstance(key, bytes) else str(key).encode()
            if is_user_key(raw.decode("utf-8", "replace"), user_id):
                keys.append(raw)
        return keys
