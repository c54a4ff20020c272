"""Graph cache (spec 001 "Graph Caching") on a real Redis server: hits, scoped invalidation, Redis down."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.harness import make_settings
from worldmm.db.models import MemoryType
from worldmm.graph.build import GraphKey, UserGraph, graph_from_edges
from worldmm.graph.cache.local import LocalGraphCache
from worldmm.graph.cache.port import build_graph_cache
from worldmm.graph.cache.redis import RedisGraphCache

pytestmark = pytest.mark.integration

U1_EPI_30 = GraphKey("u1", MemoryType.EPISODIC, 30)
U1_EPI_180 = GraphKey("u1", MemoryType.EPISODIC, 180)
U1_SEM = GraphKey("u1", MemoryType.SEMANTIC)
U2_EPI_30 = GraphKey("u2", MemoryType.EPISODIC, 30)


def _graph(tag: int) -> UserGraph:
    a, b = (tag * 2 + 1).to_bytes(16, "big"), (tag * 2 + 2).to_bytes(16, "big")
    return graph_from_edges([a], [b], [tag.to_bytes(16, "big")], [b"s" * 16])


class CountingBuilder:
    """Builds a small graph and counts how often it was asked to."""

    def __init__(self, tag: int = 1) -> None:
        self.tag = tag
        self.builds = 0

    def __call__(self) -> UserGraph:
        self.builds += 1
        return _graph(self.tag)


def _redis_cache(url: str, **kwargs: Any) -> RedisGraphCache:
    settings = make_settings(redis_url=url, redis_timeout_s=0.5)
    cache = build_graph_cache(settings)
    assert isinstance(cache, RedisGraphCache)
    return cache


def test_graph_cache_redis_hit_skips_the_build(redis_url: str, redis_client: Any) -> None:
    # GIVEN a graph built once through the cache
    cache = _redis_cache(redis_url)
    builder = CountingBuilder()
    first = cache.get_or_build(U1_EPI_30, builder)
    # WHEN it is asked for again
    second = cache.get_or_build(U1_EPI_30, builder)
    # THEN it was built once, and it is stored under the spec's key
    assert builder.builds == 1
    assert second.edge_count == first.edge_count == 1
    assert redis_client.exists("worldmm:graph:u1:episodic:30") == 1


def test_graph_cache_redis_is_shared_between_processes(redis_url: str, redis_client: Any) -> None:
    # GIVEN one process cached the semantic graph
    _redis_cache(redis_url).get_or_build(U1_SEM, CountingBuilder(tag=7))
    # WHEN another process (its own cache object, empty memory) asks for it
    builder = CountingBuilder(tag=9)
    graph = _redis_cache(redis_url).get_or_build(U1_SEM, builder)
    # THEN it reads the stored blob instead of building
    assert builder.builds == 0
    assert graph.node_keys.tolist() == _graph(7).node_keys.tolist()
    assert redis_client.exists("worldmm:graph:u1:semantic") == 1


def test_graph_cache_invalidation_is_scoped_to_the_user_and_memory_type(redis_url: str, redis_client: Any) -> None:
    # GIVEN four cached graphs: u1 episodic (two scales), u1 semantic, u2 episodic
    cache = _redis_cache(redis_url)
    builders = {key: CountingBuilder() for key in (U1_EPI_30, U1_EPI_180, U1_SEM, U2_EPI_30)}
    for key, builder in builders.items():
        cache.get_or_build(key, builder)
    # WHEN u1's episodic triples change (the writer's call)
    _redis_cache(redis_url).invalidate("u1", "episodic")
    for key, builder in builders.items():
        cache.get_or_build(key, builder)
    # THEN only u1's episodic graphs, every scale, were rebuilt
    assert builders[U1_EPI_30].builds == 2
    assert builders[U1_EPI_180].builds == 2
    assert builders[U1_SEM].builds == 1
    assert builders[U2_EPI_30].builds == 1


def test_graph_cache_invalidation_deletes_the_stored_graphs(redis_url: str, redis_client: Any) -> None:
    cache = _redis_cache(redis_url)
    cache.get_or_build(U1_SEM, CountingBuilder())
    cache.get_or_build(U2_EPI_30, CountingBuilder())
    cache.invalidate("u1", MemoryType.SEMANTIC)
    assert redis_client.exists("worldmm:graph:u1:semantic") == 0
    assert redis_client.exists("worldmm:graph:u2:episodic:30") == 1


def test_graph_cache_build_racing_an_invalidation_is_not_stored(redis_url: str, redis_client: Any) -> None:
    # GIVEN a build during which a triple insert invalidates the graph
    cache = _redis_cache(redis_url)
    other_process = _redis_cache(redis_url)

    def racing_build() -> UserGraph:
        other_process.invalidate("u1", "semantic")
        return _graph(3)

    graph = cache.get_or_build(U1_SEM, racing_build)
    # THEN the query got its graph, but the possibly stale graph was not cached
    assert graph.edge_count == 1
    assert redis_client.exists("worldmm:graph:u1:semantic") == 0
    builder = CountingBuilder()
    cache.get_or_build(U1_SEM, builder)
    assert builder.builds == 1


def test_graph_cache_redis_down_rebuilds_every_time_without_error(caplog: pytest.LogCaptureFixture) -> None:
    # GIVEN a cache whose Redis is not reachable
    from tests.support.harness import _free_port

    cache = _redis_cache(f"redis://127.0.0.1:{_free_port()}/0")
    builder = CountingBuilder()
    # WHEN graphs are asked for and invalidated
    first = cache.get_or_build(U1_EPI_30, builder)
    cache.get_or_build(U1_EPI_30, builder)
    cache.invalidate("u1", "episodic")
    # THEN every request rebuilt (spec fallback), nothing raised, and it was logged
    assert builder.builds == 2
    assert first.edge_count == 1
    assert "graph cache unavailable" in caplog.text


def test_graph_cache_redis_goes_down_after_caching(redis_url: str) -> None:
    # GIVEN a graph cached while Redis was up, then the connection breaks
    cache = _redis_cache(redis_url)
    cache.get_or_build(U1_SEM, CountingBuilder())
    from redis.exceptions import ConnectionError as RedisConnectionError

    class BrokenClient:
        def __getattr__(self, name: str) -> Callable[..., Any]:
            def fail(*args: Any, **kwargs: Any) -> Any:
                raise RedisConnectionError("connection refused")

            return fail

    cache._client = BrokenClient()
    builder = CountingBuilder()
    # WHEN asked again
    cache.get_or_build(U1_SEM, builder)
    # THEN it rebuilt from the source rather than trusting an unvalidated copy
    assert builder.builds == 1


def test_graph_cache_local_lru_hits_and_scopes_invalidation() -> None:
    cache = LocalGraphCache(capacity=8)
    builders = {key: CountingBuilder() for key in (U1_EPI_30, U1_EPI_180, U1_SEM, U2_EPI_30)}
    for key, builder in builders.items():
        cache.get_or_build(key, builder)
        cache.get_or_build(key, builder)
    cache.invalidate("u1", "episodic")
    for key, builder in builders.items():
        cache.get_or_build(key, builder)
    assert [b.builds for b in builders.values()] == [2, 2, 1, 1]


def test_graph_cache_local_lru_evicts_the_least_recently_used() -> None:
    cache = LocalGraphCache(capacity=2)
    a, b, c = CountingBuilder(), CountingBuilder(), CountingBuilder()
    cache.get_or_build(U1_EPI_30, a)
    cache.get_or_build(U1_SEM, b)
    cache.get_or_build(U1_EPI_30, a)  # touch: U1_SEM is now the oldest
    cache.get_or_build(U2_EPI_30, c)
    cache.get_or_build(U1_EPI_30, a)
    cache.get_or_build(U1_SEM, b)
    assert (a.builds, b.builds, c.builds) == (1, 2, 1)


def test_graph_cache_local_build_racing_an_invalidation_is_not_stored() -> None:
    cache = LocalGraphCache()

    def racing_build() -> UserGraph:
        cache.invalidate("u1", "semantic")
        return _graph(1)

    cache.get_or_build(U1_SEM, racing_build)
    builder = CountingBuilder()
    cache.get_or_build(U1_SEM, builder)
    assert builder.builds == 1


def test_graph_cache_factory_uses_local_cache_without_redis_url() -> None:
    assert isinstance(build_graph_cache(make_settings(redis_url=None)), LocalGraphCache)


def test_graph_cache_is_safe_under_concurrent_use(redis_url: str) -> None:
    cache = _redis_cache(redis_url)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(20):
                cache.get_or_build(U1_EPI_30, CountingBuilder())
                cache.invalidate("u1", "episodic")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
