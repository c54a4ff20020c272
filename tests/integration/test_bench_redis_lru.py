"""Issue 28: `python -m bench.bench_redis_lru` at a tiny size against a real redis-server: the hit rate it
reports comes from what Redis kept under the memory limit and the LRU policy."""

from __future__ import annotations

import pytest

from bench.bench_redis_lru import main

pytestmark = pytest.mark.integration


def test_bench_redis_lru_hit_rate_grows_with_memory_and_eviction_is_what_limits_it() -> None:
    # GIVEN 60 simulated wearers' graph-cache traffic over two days, at a quarter of the footprint and at all of it
    report = main(["--wearers", "60", "--shares", "0.25", "1.0", "--policies", "volatile-lru"])
    small, full = report["results"]
    # THEN with room for everything nothing is evicted and every blob not just invalidated is found
    assert full["evicted_keys"] == 0 and full["hit_rate_not_invalidated"] == 1.0
    # AND with a quarter of it Redis evicts (volatile-lru: only the blobs, which carry the TTL) and misses
    assert small["evicted_keys"] > 0 and small["writes_refused_oom"] == 0
    assert small["hit_rate_not_invalidated"] < full["hit_rate_not_invalidated"]
    # AND invalidation during recording caps the hit rate of all reads below 1 at any size
    assert small["hit_rate"] <= full["hit_rate"] < 1.0
    # AND the 10,000-wearer figures scale the measured shares to real sizes
    assert report["for_10k_wearers"]["by_share"][1]["memory_gb"] == report["for_10k_wearers"]["full_footprint_gb"]
