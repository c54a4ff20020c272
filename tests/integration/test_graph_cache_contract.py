"""The graph cache port's contract, run against Redis (a real redis-server) and the in-process cache.

Each adapter comes with a way for "another process" to move a graph's generation: for Redis, a second
cache object invalidating through the server; for the in-process cache, the generation PostgreSQL stores
(read through the `generation` reader the composition root gives it), here a counter the test moves.
Adapter-specific behaviour (Redis down, LRU eviction, key names) is tested in test_graph_cache.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from tests.support.harness import make_settings
from worldmm.db.models import MemoryType
from worldmm.graph.build import GraphKey, UserGraph, graph_from_edges
from worldmm.graph.cache.local import LocalGraphCache
from worldmm.graph.cache.port import SNAPSHOT_NAMES, GraphCache
from worldmm.graph.cache.redis import RedisGraphCache

pytestmark = pytest.mark.integration

EPI_30 = GraphKey("u1", MemoryType.EPISODIC, 30)
EPI_180 = GraphKey("u1", MemoryType.EPISODIC, 180)
SEM = GraphKey("u1", MemoryType.SEMANTIC)
OTHER_USER_30 = GraphKey("u2", MemoryType.EPISODIC, 30)
SCALES = (30, 180, 600, 3600)


@dataclass
class Adapter:
    cache: GraphCache
    new_generation: Callable[[GraphKey], None]
    """Another process's write: the graph's generation moves without this cache object being told."""
    shares_snapshots: bool
    """Whether a saved snapshot is there for other processes (the in-process cache keeps none)."""


def _graph(tag: int) -> UserGraph:
    a, b = (tag * 2 + 1).to_bytes(16, "big"), (tag * 2 + 2).to_bytes(16, "big")
    return graph_from_edges([a], [b], [tag.to_bytes(16, "big")], [b"s" * 16])


class Builder:
    """Builds a graph tagged `tag` and counts how often it was asked to."""

    def __init__(self, tag: int = 1) -> None:
        self.tag = tag
        self.builds = 0

    def __call__(self) -> UserGraph:
        self.builds += 1
        return _graph(self.tag)


@pytest.fixture(params=["redis", "local"])
def adapter(request: pytest.FixtureRequest) -> Iterator[Adapter]:
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        request.getfixturevalue("redis_client")  # an empty database for each test
        settings = make_settings(redis_url=url, redis_timeout_s=1.0)
        other_process = RedisGraphCache.from_url(url, settings)

        def invalidate_elsewhere(key: GraphKey) -> None:
            other_process.invalidate(key.user_id, key.memory_type, None if key.scale is None else [key.scale])

        yield Adapter(RedisGraphCache.from_url(url, settings), invalidate_elsewhere, shares_snapshots=True)
        return
    stored: dict[GraphKey, int] = {}

    def write_elsewhere(key: GraphKey) -> None:
        stored[key] = stored.get(key, 0) + 1

    cache = LocalGraphCache(capacity=16, generation=lambda key: stored.get(key, 0), scales=SCALES)
    yield Adapter(cache, write_elsewhere, shares_snapshots=False)


def _tags(graph: UserGraph) -> list[bytes]:
    return [bytes(k) for k in graph.node_keys.tolist()]


def test_graph_cache_get_or_build_builds_once_then_serves_the_cached_graph(adapter: Adapter) -> None:
    builder = Builder(tag=5)
    first = adapter.cache.get_or_build(SEM, builder)
    again = adapter.cache.get_or_build(SEM, Builder(tag=6))
    assert builder.builds == 1
    assert _tags(again) == _tags(first) == _tags(_graph(5))


def test_graph_cache_keys_do_not_share_graphs(adapter: Adapter) -> None:
    adapter.cache.get_or_build(EPI_30, Builder(tag=1))
    other = Builder(tag=2)
    assert _tags(adapter.cache.get_or_build(OTHER_USER_30, other)) == _tags(_graph(2))
    assert _tags(adapter.cache.get_or_build(SEM, Builder(tag=3))) == _tags(_graph(3))
    assert other.builds == 1


def test_graph_cache_invalidating_one_scale_retires_only_that_scale(adapter: Adapter) -> None:
    # GIVEN three cached graphs of u1 and one of u2
    builders = {key: Builder() for key in (EPI_30, EPI_180, SEM, OTHER_USER_30)}
    for key, builder in builders.items():
        adapter.cache.get_or_build(key, builder)
    # WHEN u1's 30 s episodic graph is invalidated
    adapter.cache.invalidate("u1", MemoryType.EPISODIC, [30])
    for key, builder in builders.items():
        adapter.cache.get_or_build(key, builder)
    # THEN only that graph was rebuilt
    assert {key: b.builds for key, b in builders.items()} == {EPI_30: 2, EPI_180: 1, SEM: 1, OTHER_USER_30: 1}


def test_graph_cache_invalidating_a_memory_type_retires_every_scale_of_that_user_only(adapter: Adapter) -> None:
    builders = {key: Builder() for key in (EPI_30, EPI_180, SEM, OTHER_USER_30)}
    for key, builder in builders.items():
        adapter.cache.get_or_build(key, builder)
    adapter.cache.invalidate("u1", "episodic")
    for key, builder in builders.items():
        adapter.cache.get_or_build(key, builder)
    assert {key: b.builds for key, b in builders.items()} == {EPI_30: 2, EPI_180: 2, SEM: 1, OTHER_USER_30: 1}


def test_graph_cache_a_new_generation_written_elsewhere_is_rebuilt(adapter: Adapter) -> None:
    # GIVEN a warm cache holding the graph
    adapter.cache.get_or_build(EPI_30, Builder(tag=1))
    adapter.cache.get_or_build(EPI_180, Builder(tag=1))
    # WHEN another process writes triples for the 30 s graph (its generation moves)
    adapter.new_generation(EPI_30)
    fresh, untouched = Builder(tag=2), Builder(tag=3)
    # THEN this cache builds the new graph (and serves it from then on), and the 180 s graph is still cached
    assert _tags(adapter.cache.get_or_build(EPI_30, fresh)) == _tags(_graph(2))
    assert _tags(adapter.cache.get_or_build(EPI_30, fresh)) == _tags(_graph(2))
    assert fresh.builds == 1
    assert _tags(adapter.cache.get_or_build(EPI_180, untouched)) == _tags(_graph(1))
    assert untouched.builds == 0


def test_graph_cache_a_build_racing_an_invalidation_is_served_but_not_kept(adapter: Adapter) -> None:
    def racing_build() -> UserGraph:
        adapter.cache.invalidate("u1", MemoryType.SEMANTIC)
        return _graph(1)

    assert _tags(adapter.cache.get_or_build(SEM, racing_build)) == _tags(_graph(1))
    after = Builder(tag=2)
    assert _tags(adapter.cache.get_or_build(SEM, after)) == _tags(_graph(2))
    assert after.builds == 1


def test_graph_cache_snapshot_round_trips_at_its_generation_only(adapter: Adapter) -> None:
    # GIVEN a lexical snapshot saved at generation 7
    blob = bytes(range(256)) * 4
    adapter.cache.save_snapshot("u1", "lexical", 7, blob)
    # THEN at generation 7 it comes back byte for byte where the adapter shares snapshots (a miss otherwise)
    loaded = adapter.cache.load_snapshot("u1", "lexical", 7)
    assert (bytes(loaded) if loaded is not None else None) == (blob if adapter.shares_snapshots else None)
    # AND any other generation, or another user, misses
    assert adapter.cache.load_snapshot("u1", "lexical", 8) is None
    assert adapter.cache.load_snapshot("u1", "lexical", 6) is None
    assert adapter.cache.load_snapshot("u2", "lexical", 7) is None


def test_graph_cache_a_newer_snapshot_replaces_the_older(adapter: Adapter) -> None:
    adapter.cache.save_snapshot("u1", "lexical", 1, b"old")
    adapter.cache.save_snapshot("u1", "lexical", 2, b"new")
    assert adapter.cache.load_snapshot("u1", "lexical", 1) is None
    loaded = adapter.cache.load_snapshot("u1", "lexical", 2)
    assert (bytes(loaded) if loaded is not None else None) == (b"new" if adapter.shares_snapshots else None)


@pytest.mark.parametrize("name", ["bm25", "lexical:gen", ""])
def test_graph_cache_refuses_a_snapshot_name_forget_me_would_not_erase(adapter: Adapter, name: str) -> None:
    assert name not in SNAPSHOT_NAMES
    with pytest.raises(ValueError, match="unknown snapshot"):
        adapter.cache.save_snapshot("u1", name, 1, b"x")
    with pytest.raises(ValueError, match="unknown snapshot"):
        adapter.cache.load_snapshot("u1", name, 1)
