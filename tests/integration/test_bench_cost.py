"""Issue 28: `python -m bench.bench_cost` at a tiny size (2 windows, 1 chat) on the deployed-stack emulators.

The figures it prices must come from what the functions did: one caption call per window with the
configured number of frames, usage rows the code wrote that match what the model server billed, GB-seconds
from measured handler time, the bucket's bytes and PostgreSQL rows the hour added.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.bench_cost import image_tokens

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PRICES = json.loads((ROOT / "bench" / "prices.json").read_text())


def test_bench_cost_image_tokens_follow_the_published_rules() -> None:
    # gpt-4o-style tiles: 1024x1024 at high detail is scaled to 768x768, 4 tiles: 85 + 4 x 170
    assert image_tokens({"rule": "tiles", "base": 85, "per_tile": 170, "tile_px": 512}, 1024, 1024) == 765
    # gpt-5-mini patches: 1280x720 is 40 x 23 patches of 32 px, times the model's multiplier
    rule = PRICES["models"]["gpt-5-mini"]["image_tokens"]
    assert image_tokens(rule, 1280, 720) == -(-920 * rule["multiplier"] // 1)
    assert image_tokens(rule, 4000, 4000) == -(-rule["max_patches"] * rule["multiplier"] // 1)


def test_bench_cost_prices_every_line_from_what_a_tiny_hour_did() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench.bench_cost", "--windows", "2", "--chats", "1", "--config", "shipped", "cheaper"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads([line for line in run.stdout.splitlines() if line.startswith("{")][-1])
    shipped, cheaper = report["configs"]["shipped"], report["configs"]["cheaper"]
    caption = shipped["models"]["caption"]
    # one caption per window, with the shipped 4 frames each, billed as the usage rows the code wrote
    assert caption["calls"] == 2 and caption["images"] == 8
    assert caption["usage_table"] == {
        "calls": 2,
        "prompt_tokens": caption["input_tokens"],
        "completion_tokens": caption["output_tokens"],
    }
    assert cheaper["models"]["caption"]["images"] == 4  # CAPTION_FRAMES=2
    assert shipped["whisper"] == {"requests": 2, "minutes": 1.0, "model": "whisper-large-v3"}
    assert shipped["lambda"]["IngestWindowFunction"]["invocations"] == 2
    assert shipped["lambda"]["IngestWindowFunction"]["memory_mb"] == 1024 and shipped["lambda_handler_gb_s"] > 0
    assert shipped["s3"]["bytes_written"] > 2 * 16 * 1000 and shipped["s3"]["puts"] == 2 * 17
    assert shipped["postgres"]["worldmm_segments"]["rows"] >= 2 and shipped["postgres_bytes"] > 0
    # where the bytes are: each table's heap, TOAST and indexes (issue 63), summing to at most the tables' total
    relations = shipped["postgres_relations"]
    assert relations["worldmm_segments"]["heap"] > 0
    assert all(part in ("heap", "toast") or part.startswith("index ") for p in relations.values() for part in p)
    assert sum(sum(p.values()) for p in relations.values()) <= shipped["postgres_bytes"]
    assert "index ix_triples_embedding_hnsw" not in shipped["postgres_relations"].get("worldmm_triples", {})
    usd = shipped["usd"]
    assert usd["lines_usd_per_wearer_hour"]["model:caption"] > 0 and len(usd["top3"]) == 3
    assert cheaper["usd"]["variable_usd_per_wearer_hour"] < usd["variable_usd_per_wearer_hour"]
    assert report["prices_as_of"] == PRICES["as_of"]
    growth = report["growth"]["shipped"]
    days, per_hour, kept = growth["days"], growth["per_wearer_hour"], growth["kept_per_wearer_hour"]
    assert days["90"]["s3_bytes"] == 90 * days["1"]["s3_bytes"] > 0
    # the app events' outbox is pruned after 14 days: it grows for 14 days, the rest for 90
    outbox = shipped["postgres"]["worldmm_event_outbox"]["bytes"] * 60
    assert kept["postgres_bytes"] == per_hour["postgres_bytes"] - outbox
    assert abs(days["90"]["postgres_bytes"] - (kept["postgres_bytes"] * 90 + outbox * 14) * 4) <= 1
