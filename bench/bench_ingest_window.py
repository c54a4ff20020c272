"""Benchmark: the ingest pipeline's own overhead per 30 s window, with zero-latency providers.

Everything real except the models: embedded PostgreSQL (pgvector, RLS), files on disk
(DirectoryObjectStore), 20 frames + a .wav per window (16 sampled). Models answer instantly: the
scripted LLM, the hash text embedder, a hashing VisualEncoder double and a fixed transcript. Each window is
window 0 of its own session, so no multiscale summary is due and the figure is the window path alone:
idempotency check, listing, claim, frame loads, caption/NER/triples parsing, entity resolution, triple
and caption embeddings, the final write and usage rows. Prints one JSON object; goal p50 ≤ 25 ms (issue 16).

    python -m bench.bench_ingest_window [--windows 200] [--warmup 10]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.transcription.port import Transcript, TranscriptSegment, Voice

TEXT_DIM = 384
VISUAL_DIM = 1536


class _InstantVisualEncoder:
    """A zero-latency VisualEncoder: a deterministic unit vector from the clip's bytes."""

    model_id = "bench-instant"

    def _unit(self, data: bytes) -> list[float]:
        digest = hashlib.sha256(data).digest()
        vec = [float(digest[i % 32]) - 127.5 for i in range(VISUAL_DIM)]
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec]

    def encode_video(self, frames: list[bytes]) -> list[float]:
        return self._unit(b"".join(frames))

    def encode_text(self, text: str) -> list[float]:
        return self._unit(text.encode())


class _InstantTranscriber:
    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript:
        text = "Alice: shall we look at the quarterly numbers?"
        return Transcript(text, [TranscriptSegment(0.0, 4.0, text)])


def _llm() -> ScriptedLLM:
    def caption(request: LLMRequest) -> dict[str, str]:
        return {"caption": f"I review the quarterly numbers with Alice at the desk ({len(request.messages)})."}

    return (
        ScriptedLLM()
        .script("caption", caption)
        .script("ner", {"entities": ["I", "Alice", "desk", "quarterly numbers"]})
        .script(
            "episodic_triples",
            {
                "triples": [
                    ["I", "reviews", "quarterly numbers"],
                    ["I", "sits at", "desk"],
                    ["Alice", "talks to", "I"],
                ]
            },
        )
        .script("entity_confirm", {"decisions": []})
    )


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args(argv)
    logging.disable(logging.INFO)

    from worldmm.config import Settings
    from worldmm.db import migrate
    from worldmm.db.engine import Database
    from worldmm.db.local import start_local_database
    from worldmm.ingest.events import IngestWindowEvent
    from worldmm.ingest.invoker.local import InProcessInvoker
    from worldmm.ingest.window import ingest_window
    from worldmm.media.objects import DirectoryObjectStore
    from worldmm.memory.embedding.hashing import HashEmbedder
    from worldmm.services import Services

    work = Path(tempfile.mkdtemp(prefix="worldmm-bench-window-"))
    work.chmod(0o755)
    try:
        base = Settings(
            worldmm_home=work,
            embedding_dim=TEXT_DIM,
            visual_embedding_dim=VISUAL_DIM,
            llm_provider="scripted",
        )
        local = start_local_database(work / "pgdata", app_role=base.database_app_role)
        try:
            migrate.upgrade(base, admin_url=local.admin_url)
            settings = base.model_copy(update={"database_url": local.app_url, "database_admin_url": local.admin_url})
            store = DirectoryObjectStore(work / "objects")
            total = args.warmup + args.windows
            for n in range(total):
                sid = f"bench-{n:05d}"
                store.put(
                    f"sessions/{sid}/metadata.json",
                    json.dumps({"createdAt": 1_777_000_000 + n * 30, "userId": "bench-user"}).encode(),
                )
                for f in range(20):
                    store.put(
                        f"sessions/{sid}/window_0/frame_{f:04d}.jpg",
                        b"\xff\xd8" + bytes(2048) + f"{n}-{f}".encode(),
                    )
                store.put(f"sessions/{sid}/window_0/audio.wav", b"RIFF" + bytes(4096))
            services = Services(
                settings,
                db=Database(local.app_url),
                llm=_llm(),
                embedder=HashEmbedder(TEXT_DIM),
                store=store,
                transcriber=_InstantTranscriber(),
                visual=_InstantVisualEncoder(),
                invoker=InProcessInvoker(),
            )
            timings: list[float] = []
            cpu: list[float] = []
            statuses: dict[str, int] = {}
            for n in range(total):
                event = IngestWindowEvent(sessionId=f"bench-{n:05d}", userId="bench-user", windowIndex=0, frameCount=20)
                start, start_cpu = time.perf_counter(), time.process_time()
                result = ingest_window(services, event).model_dump()
                elapsed_ms = (time.perf_counter() - start) * 1000
                if n >= args.warmup:
                    timings.append(elapsed_ms)
                    cpu.append((time.process_time() - start_cpu) * 1000)
                    statuses[result["status"]] = statuses.get(result["status"], 0) + 1
        finally:
            local.server.cleanup()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    p50 = statistics.median(timings)
    result_doc = {
        "benchmark": "ingest_window_overhead",
        "windows": args.windows,
        "warmup": args.warmup,
        "providers": "scripted LLM, hash embedder, instant visual encoder, fixed transcript (zero latency)",
        "statuses": statuses,
        "p50_ms": round(p50, 2),
        "p95_ms": round(_percentile(timings, 0.95), 2),
        "mean_ms": round(statistics.fmean(timings), 2),
        "max_ms": round(max(timings), 2),
        # this process's CPU per window (the rest of the wall time is PostgreSQL and waiting for it)
        "client_cpu_p50_ms": round(statistics.median(cpu), 2),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "goal_p50_ms": 25,
        "goal_met": p50 <= 25,
        "baseline": "issue 16 before: p50 38.7-41.4 ms (2 cores)",
    }
    print(json.dumps(result_doc, indent=2))
    return result_doc


if __name__ == "__main__":
    main()
