"""The lexical (BM25) index snapshot: a cold process loads another process's index from Redis, not the database."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.support.harness import make_settings
from tests.support.retrieval import MemoryWriter
from worldmm.graph.cache.local import LocalGraphCache
from worldmm.graph.cache.port import build_graph_cache
from worldmm.graph.cache.redis import RedisGraphCache
from worldmm.retrieval import lexical
from worldmm.retrieval.lexical import SegmentIndex, SegmentIndexCache, build_segment_index
from worldmm.services import Services

pytestmark = pytest.mark.integration

USER = "u1"


def _write(services: Services) -> MemoryWriter:
    w = MemoryWriter(services, USER)
    w.segment("I had coffee with Katrina at the corner cafe")
    w.segment("Katrina fixed the bike; coffee again later")
    w.segment("A slow morning of reading", duration=180)
    return w


def _generation(services: Services) -> int:
    with services.db.unit_of_work(USER) as session:
        return lexical.query_lexemes(session, USER, "coffee")[0]


class _CountingBuilds:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, session: Any, user_id: str) -> SegmentIndex:
        self.calls += 1
        return build_segment_index(session, user_id)


def test_segment_index_snapshot_round_trips_and_scores_the_same(services: Services) -> None:
    # GIVEN a user's index built from the database
    _write(services)
    with services.db.unit_of_work(USER) as session:
        built = build_segment_index(session, USER)
    # WHEN it goes through its snapshot
    loaded = SegmentIndex.from_bytes(memoryview(built.to_bytes()))
    # THEN ids, times, vocabulary and BM25 scores are the same
    assert list(loaded.ids) == list(built.ids) and loaded.ids[1:] == list(built.ids)[1:]
    assert loaded.vocabulary == built.vocabulary
    assert np.array_equal(loaded.end_s, built.end_s) and np.array_equal(loaded.durations, built.durations)
    mask = loaded.visible([30, 180], 1e12)
    for lexemes in (["coffe", "katrina"], ["read"], ["nothing"]):
        assert np.array_equal(loaded.bm25(lexemes, mask), built.bm25(lexemes, mask))


def test_a_cold_cache_loads_the_snapshot_from_redis_instead_of_the_database(
    services: Services, redis_url: str, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN one process built the user's index with the Redis store beside it
    writer = _write(services)
    store = build_graph_cache(make_settings(redis_url=redis_url))
    assert isinstance(store, RedisGraphCache)
    builds = _CountingBuilds()
    monkeypatch.setattr(lexical, "build_segment_index", builds)
    generation = _generation(services)
    with services.db.unit_of_work(USER) as session:
        warm = SegmentIndexCache().get(session, USER, generation, store=store)
    assert builds.calls == 1 and redis_client.exists(f"worldmm:graph:{USER}:lexical") == 1
    # WHEN a fresh process (a new cache) asks at the same generation
    with services.db.unit_of_work(USER) as session:
        cold = SegmentIndexCache().get(session, USER, generation, store=store)
    # THEN it is the same index, and nothing was rebuilt
    assert builds.calls == 1
    assert list(cold.ids) == list(warm.ids)
    # WHEN a segment is written (the generation moves)
    writer.segment("Coffee with Lucia")
    with services.db.unit_of_work(USER) as session:
        fresh = SegmentIndexCache().get(session, USER, _generation(services), store=store)
    # THEN the stale snapshot is not used: the index is rebuilt with the new segment
    assert builds.calls == 2 and fresh.size == warm.size + 1


def test_without_redis_there_is_no_shared_snapshot(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(services)
    store = LocalGraphCache()
    builds = _CountingBuilds()
    monkeypatch.setattr(lexical, "build_segment_index", builds)
    generation = _generation(services)
    for _ in range(2):  # two processes
        with services.db.unit_of_work(USER) as session:
            SegmentIndexCache().get(session, USER, generation, store=store)
    assert builds.calls == 2
