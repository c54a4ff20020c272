"""Benchmark: ingest_session of one hour (120 windows) with simulated model latency, serial vs concurrent.

Both runs happen in one process on one embedded PostgreSQL (each as its own user, so the second does
not resume the first): the scripted LLM sleeps `--latency` seconds per call, the embedder is the
zero-latency hash embedder, there is no GPU. Prints one JSON object; the goal is concurrent ≤ serial / 8.

    python -m bench.bench_ingest_session [--windows 120] [--latency 0.5] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.transcription.port import Transcript, TranscriptSegment, Voice

SESSION = "bench-hour"


class _Transcriber:
    """Simulated speech to text: one line every 10 s (transcription is not what this measures)."""

    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript:
        segments = [TranscriptSegment(t, t + 10, f"I talk about topic {t // 60}") for t in range(0, 7200, 10)]
        return Transcript(" ".join(s.text for s in segments), segments)


def _llm(latency_s: float) -> ScriptedLLM:
    def caption(request: LLMRequest) -> dict[str, str]:
        return {"caption": f"I work at the desk with Alice. {hash(request.prompt_text) % 1000}"}

    def merge(request: LLMRequest) -> dict[str, str]:
        return {"summary": f"I spent the span working with Alice. {hash(request.prompt_text) % 1000}"}

    return (
        ScriptedLLM(latency_s=latency_s)
        .script("caption", caption)
        .script("ner", {"entities": ["I", "Alice", "desk"]})
        .script("episodic_triples", {"triples": [["I", "works with", "Alice"], ["I", "sits at", "desk"]]})
        .script("entity_confirm", {"decisions": []})
        .script("merge_captions", merge)
        .script("semantic_triples", {"triples": [["I", "often works with", "Alice"]]})
        .script("consolidation", {"event": "NONE", "target_ids": [], "triple": None, "reason": "known"})
    )


def _session_dir(root: Path, windows: int) -> Path:
    root.mkdir(parents=True)
    meta = {"session_id": SESSION, "window_count": windows, "video_start_ms": 1_777_000_000_000}
    meta["audio_start_ms"] = meta["video_start_ms"]
    (root / "metadata.json").write_text(json.dumps(meta))
    (root / "audio.m4a").write_bytes(b"recording")
    for n in range(windows):
        (root / f"window_{n}").mkdir()
        for f in range(4):
            (root / f"window_{n}" / f"frame_{f:03d}.jpg").write_bytes(f"jpeg {n} {f}".encode())
    return root


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=120)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)
    logging.disable(logging.INFO)

    from worldmm.config import Settings
    from worldmm.db import migrate
    from worldmm.db.engine import Database
    from worldmm.db.local import start_local_database
    from worldmm.ingest.session import ingest_session
    from worldmm.memory.embedding.hashing import HashEmbedder
    from worldmm.memory.visual.port import UnavailableVisualEncoder
    from worldmm.services import Services

    work = Path(tempfile.mkdtemp(prefix="worldmm-bench-"))
    work.chmod(0o755)
    try:
        base = Settings(worldmm_home=work, embedding_dim=64, llm_provider="scripted")
        local = start_local_database(work / "pgdata", app_role=base.database_app_role)
        try:
            migrate.upgrade(base, admin_url=local.admin_url)
            settings = base.model_copy(
                update={"database_url": local.app_url, "database_admin_url": local.admin_url}
            )
            session_dir = _session_dir(work / "session", args.windows)
            runs: dict[str, Any] = {}
            for label, concurrency in (("serial", 1), ("concurrent", args.concurrency)):
                llm = _llm(args.latency)
                services = Services(
                    settings,
                    db=Database(local.app_url),
                    llm=llm,
                    embedder=HashEmbedder(64),
                    transcriber=_Transcriber(),
                    visual=UnavailableVisualEncoder("benchmark: no GPU worker"),
                )
                report = ingest_session(
                    session_dir, f"bench-{label}", services=services, concurrency=concurrency, progress=False
                )
                runs[label] = {
                    "concurrency": concurrency,
                    "wall_s": round(report.wall_s, 2),
                    "model_calls": len(llm.calls),
                    "windows_enriched": report.enriched,
                    "summaries": report.summaries,
                    "failed": len(report.failed),
                }
        finally:
            local.server.cleanup()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratio = runs["concurrent"]["wall_s"] / runs["serial"]["wall_s"]
    result = {
        "benchmark": "ingest_session_one_hour",
        "windows": args.windows,
        "model_latency_s": args.latency,
        "serial": runs["serial"],
        "concurrent": runs["concurrent"],
        "concurrent_over_serial": round(ratio, 4),
        "speedup": round(1 / ratio, 2),
        "goal_met": ratio <= 1 / 8,
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
