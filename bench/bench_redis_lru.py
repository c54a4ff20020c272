"""Graph-cache hit rate against Redis memory under LRU eviction: what 10,000 wearers need.

A real redis-server (127.0.0.1) with `maxmemory` set to a share of the cache's full footprint and an LRU
policy (`volatile-lru`, ElastiCache's default, and `allkeys-lru`) receives the graph cache's traffic for
`--wearers` simulated wearers over `--days` days in 10-minute steps, with the key grammar and invalidation
script of worldmm/graph/cache/redis.py: per wearer the semantic graph, the episodic graphs of the four
scales and the lexical snapshot, each with its generation key. Each wearer records `--hours` hours a day
from a start hour drawn uniformly in [7, 19); while recording, every step invalidates the 30 s / 3 min
graphs and the lexical snapshot, every second step the 10 min graph, every hour the 1 h and semantic
graphs (what ingest, summaries and consolidation do), and the wearer asks 6 questions an hour; off wear,
`--idle-chats` questions a day. A question reads all six blobs (GET generation + GET blob); a miss rebuilds
and stores the blob (SET ... EX ttl; the TTL, GRAPH_CACHE_TTL_S, runs in simulated time: a blob read
`--ttl-s` after it was stored counts as expired). Blob sizes are the per-wearer Redis bytes at 90 days (bench_cost's
extrapolation, `--mb-at-90-days`) split over the six keys, scaled by each wearer's memory age (uniform 1-90
days) and divided by `--scale` so the run fits a laptop; the hit rate depends on memory as a share of the
footprint, which the scaling keeps. The first day warms the cache; the last day is measured.

Reported per policy and memory share: hit rate of every blob read, and of the reads whose blob had not just
been invalidated by new memories (those miss at any size), evictions; then the memory 10,000 wearers need
for each hit rate.

    python -m bench.bench_redis_lru [--wearers 1000] [--days 2] [--shares 0.1 0.25 0.5 0.75 1] [--ttl-s 86400]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from dataclasses import dataclass
from typing import Any

STEP_S = 600
STEPS_PER_DAY = 86_400 // STEP_S
SCALES = (30, 180, 600, 3600)
# Share of a wearer's cache bytes per blob (the lexical snapshot and the 30 s graph are the big ones).
KEY_WEIGHTS = {"semantic": 0.15, "episodic:30": 0.35, "episodic:180": 0.15, "episodic:600": 0.08,
               "episodic:3600": 0.04, "lexical": 0.23}  # fmt: skip
# Which blobs a step of recording invalidates: every step, every 2nd, every 6th (one hour).
INVALIDATED_EVERY = {"episodic:30": 1, "episodic:180": 1, "lexical": 1, "episodic:600": 2,
                     "episodic:3600": 6, "semantic": 6}  # fmt: skip


@dataclass
class Wearer:
    user_id: str
    start_step: int
    sizes: dict[str, int]


def make_wearers(count: int, hours: float, mb_at_90_days: float, scale: int, rng: random.Random) -> list[Wearer]:
    wearers = []
    for i in range(count):
        age_days = rng.uniform(1, 90)
        total = mb_at_90_days * 1e6 * age_days / 90 / scale
        start = int(rng.uniform(7, 19) * 3600 // STEP_S)
        sizes = {name: max(64, int(total * w)) for name, w in KEY_WEIGHTS.items()}
        wearers.append(Wearer(f"sim-{i:05d}", start, sizes))
    return wearers


def blob_key(user_id: str, name: str) -> str:
    from worldmm.graph.cache.keys import snapshot_key

    if name == "lexical":
        return snapshot_key(user_id, "lexical")
    return f"worldmm:graph:{user_id}:{name}"


class Simulation:
    """The graph cache's traffic, step by step, pipelined per step."""

    def __init__(self, client: Any, wearers: list[Wearer], args: argparse.Namespace, seed: int) -> None:
        from worldmm.graph.cache.keys import GENERATION_COUNTER_KEY
        from worldmm.graph.cache.redis import _INVALIDATE  # the cache's own invalidation script

        self.client = client
        self.wearers = wearers
        self.args = args
        self.rng = random.Random(seed)
        self.counter = GENERATION_COUNTER_KEY
        self.invalidate = client.register_script(_INVALIDATE)
        self.wear_steps = int(args.hours * 3600 / STEP_S)
        self.stale: set[str] = set()  # blobs invalidated since they were last read
        self.written: dict[str, int] = {}  # step each blob was stored: its TTL runs in simulated time
        self.ttl_steps = args.ttl_s // STEP_S
        self.reset_counts()

    def reset_counts(self) -> None:
        self.reads = self.hits = self.fresh_reads = self.fresh_hits = self.refused = self.expired = 0
        self.peak_recording = 0

    def recording(self, wearer: Wearer, step: int) -> bool:
        return 0 <= (step % STEPS_PER_DAY) - wearer.start_step < self.wear_steps

    def step(self, step: int) -> None:
        pipe = self.client.pipeline(transaction=False)
        readers: list[Wearer] = []
        recording = 0
        idle_p = self.args.idle_chats / STEPS_PER_DAY
        for wearer in self.wearers:
            if self.recording(wearer, step):
                recording += 1
                since = (step % STEPS_PER_DAY) - wearer.start_step
                for name, every in INVALIDATED_EVERY.items():
                    if since % every == 0:
                        key = blob_key(wearer.user_id, name)
                        self.stale.add(key)
                        if name == "lexical":
                            pipe.delete(key)  # a new lexical generation: the stored snapshot no longer matches
                        else:
                            self.invalidate(keys=[self.counter, key, key + ":gen"], client=pipe)
                if self.rng.random() < STEP_S / 600:  # 6 questions an hour
                    readers.append(wearer)
            elif self.rng.random() < idle_p:
                readers.append(wearer)
        self.peak_recording = max(self.peak_recording, recording)
        keys = [blob_key(w.user_id, name) for w in readers for name in KEY_WEIGHTS]
        sizes = [w.sizes[name] for w in readers for name in KEY_WEIGHTS]
        for key in keys:
            pipe.get(key + ":gen")
            pipe.get(key)
        replies = pipe.execute(raise_on_error=False)[-2 * len(keys) :] if keys else []
        refill = self.client.pipeline(transaction=False)
        for i, (key, size) in enumerate(zip(keys, sizes, strict=True)):
            hit = replies[2 * i + 1] is not None
            if hit and step - self.written.get(key, step) >= self.ttl_steps:
                hit = False  # Redis would have expired it (SET ... EX ttl; reads do not renew it)
                self.expired += 1
            self.reads += 1
            self.hits += hit
            if key not in self.stale:
                self.fresh_reads += 1
                self.fresh_hits += hit
            self.stale.discard(key)
            if not hit:
                refill.set(key, b"\0" * size, ex=self.args.ttl_s)
                self.written[key] = step
        self.refused += sum(isinstance(r, Exception) for r in refill.execute(raise_on_error=False))


def run_share(url: str, args: argparse.Namespace, policy: str, share: float, full_bytes: int, base: int) -> dict:
    import redis

    client = redis.Redis.from_url(url)
    client.flushall()
    limit = 0 if share >= 1 else int(base + share * (full_bytes - base))
    client.config_set("maxmemory", limit)
    client.config_set("maxmemory-policy", policy)
    evicted_before = int(client.info("stats")["evicted_keys"])
    wearers = make_wearers(args.wearers, args.hours, args.mb_at_90_days, args.scale, random.Random(1))
    sim = Simulation(client, wearers, args, seed=2)
    started = time.monotonic()
    for step in range(args.days * STEPS_PER_DAY):
        if step == (args.days - 1) * STEPS_PER_DAY:
            sim.reset_counts()
        sim.step(step)
    used = int(client.info("memory")["used_memory"])
    result = {
        "policy": policy,
        "memory_share": share,
        "maxmemory_bytes": limit,
        "used_memory_bytes": used,
        "reads": sim.reads,
        "hit_rate": round(sim.hits / sim.reads, 4) if sim.reads else None,
        "hit_rate_not_invalidated": round(sim.fresh_hits / sim.fresh_reads, 4) if sim.fresh_reads else None,
        "evicted_keys": int(client.info("stats")["evicted_keys"]) - evicted_before,
        "writes_refused_oom": sim.refused,
        "expired_reads": sim.expired,
        "peak_share_recording": round(sim.peak_recording / len(wearers), 3),
        "seconds": round(time.monotonic() - started, 1),
    }
    client.close()
    return result


def full_footprint(url: str, args: argparse.Namespace) -> tuple[int, int]:
    """used_memory with every wearer's blobs and generations stored, and the empty server's."""
    import redis

    client = redis.Redis.from_url(url)
    client.flushall()
    client.config_set("maxmemory", 0)
    base = int(client.info("memory")["used_memory"])
    pipe = client.pipeline(transaction=False)
    for wearer in make_wearers(args.wearers, args.hours, args.mb_at_90_days, args.scale, random.Random(1)):
        for name, size in wearer.sizes.items():
            key = blob_key(wearer.user_id, name)
            pipe.set(key, b"\0" * size, ex=args.ttl_s)
            pipe.set(key + ":gen", 1)
    pipe.execute()
    full = int(client.info("memory")["used_memory"])
    client.flushall()
    client.close()
    return full, base


def for_10k(results: list[dict[str, Any]], args: argparse.Namespace, wearers: int = 10_000) -> dict[str, Any]:
    """Memory 10,000 wearers need at each measured share (real sizes: the scale undone)."""
    mean_mb = args.mb_at_90_days * (1 + 90) / 2 / 90  # memory ages uniform in 1..90 days
    footprint_gb = wearers * mean_mb / 1000
    return {
        "wearers": wearers,
        "mb_per_wearer_at_90_days": args.mb_at_90_days,
        "mean_mb_per_wearer": round(mean_mb, 2),
        "full_footprint_gb": round(footprint_gb, 1),
        "by_share": [
            {
                "policy": r["policy"],
                "memory_gb": round(r["memory_share"] * footprint_gb, 1),
                "hit_rate": r["hit_rate"],
                "hit_rate_not_invalidated": r["hit_rate_not_invalidated"],
            }
            for r in results
        ],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wearers", type=int, default=1000)
    parser.add_argument("--days", type=int, default=2, help="simulated days (the last one is measured)")
    parser.add_argument("--hours", type=float, default=4.0, help="hours of wear a day")
    parser.add_argument("--idle-chats", type=float, default=2.0, help="questions a day outside wear")
    parser.add_argument("--mb-at-90-days", type=float, default=23.9, help="a wearer's Redis MB at 90 days")
    parser.add_argument("--scale", type=int, default=200, help="blob sizes divided by this")
    parser.add_argument("--ttl-s", type=int, default=86_400, help="GRAPH_CACHE_TTL_S, run in simulated time")
    parser.add_argument("--shares", type=float, nargs="*", default=[0.1, 0.25, 0.5, 0.75, 1.0])
    parser.add_argument("--policies", nargs="*", default=["volatile-lru", "allkeys-lru"])
    args = parser.parse_args(argv)
    from tests.support.harness import redis_server

    results = []
    with redis_server() as url:
        full, base = full_footprint(url, args)
        for policy in args.policies:
            for share in args.shares:
                results.append(run_share(url, args, policy, share, full, base))
    report = {
        "bench": "redis_lru",
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, load {os.getloadavg()[0]:.2f}",
        "wearers_simulated": args.wearers,
        "scale": args.scale,
        "full_footprint_bytes_scaled": full - base,
        "results": results,
        "for_10k_wearers": for_10k(results, args),
    }
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
