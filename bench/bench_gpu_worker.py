"""Throughput of the GPU worker's /encode-video (clips/s) on a given model directory; prints JSON.

    python bench/bench_gpu_worker.py --model-dir /models/vlm2vec-v2 --clips 64 --concurrency 8
    python bench/bench_gpu_worker.py --tiny          # a tiny random Qwen2-VL built on the fly (CPU smoke)

Requests go through the real app (auth, decoding, micro-batching) over HTTP in process.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--tiny", action="store_true", help="build a tiny random Qwen2-VL instead")
    parser.add_argument("--clips", type=int, default=32)
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--frame-size", type=int, nargs=2, default=(640, 480), metavar=("W", "H"))
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--embedding-dim", type=int, default=None)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()

    import httpx2
    import torch
    from fastapi.testclient import TestClient

    from gpu_worker.app import create_app
    from gpu_worker.settings import WorkerSettings
    from tests.support.gpu_worker import b64, build_tiny_qwen2vl, jpeg_bytes
    from worldmm.worker_signing import signer_for

    if args.tiny:
        model_dir = build_tiny_qwen2vl(Path(tempfile.mkdtemp(prefix="tiny-qwen2vl-")))
    elif args.model_dir:
        model_dir = args.model_dir
    else:
        parser.error("give --model-dir or --tiny")
    settings = WorkerSettings(
        model_dir=model_dir,
        token="bench",
        embedding_dim=args.embedding_dim,
        batch_size=args.batch_size,
        device=args.device,
        max_frames=max(args.frames, 32),
    )
    signed = signer_for(httpx2.Auth, lambda: "bench")  # the worker takes signed requests only
    clips = [
        [b64(jpeg_bytes(c * 1000 + f, tuple(args.frame_size))) for f in range(args.frames)]
        for c in range(args.clips)
    ]
    started = time.perf_counter()
    app = create_app(settings)
    with TestClient(app) as client:
        while (status := client.get("/health").json())["status"] == "loading":
            time.sleep(0.1)
        if status["status"] != "ready":
            raise SystemExit(json.dumps(status))
        load_s = time.perf_counter() - started

        def encode(frames: list[str]) -> float:
            t0 = time.perf_counter()
            response = client.post("/encode-video", json={"frames": frames}, auth=signed)
            response.raise_for_status()
            return time.perf_counter() - t0

        encode(clips[0])  # warm-up (kernels, allocator)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            latencies = sorted(pool.map(encode, clips))
        wall = time.perf_counter() - t0
        batches = app.state.worker.video_batcher.batches_run
        dim = len(client.post("/encode-text", json={"text": "x"}, auth=signed).json()["embedding"])

    print(
        json.dumps(
            {
                "bench": "gpu_worker_encode_video",
                "model_dir": str(model_dir),
                "device": settings.device
                if settings.device != "auto"
                else ("cuda" if torch.cuda.is_available() else "cpu"),
                "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                "host": platform.node(),
                "clips": args.clips,
                "frames_per_clip": args.frames,
                "frame_size": list(args.frame_size),
                "concurrency": args.concurrency,
                "batch_size": args.batch_size,
                "embedding_dim": dim,
                "model_load_s": round(load_s, 2),
                "clips_per_s": round(args.clips / wall, 3),
                "latency_p50_s": round(latencies[len(latencies) // 2], 4),
                "latency_p95_s": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))], 4),
                "model_batches": batches,
            }
        )
    )


if __name__ == "__main__":
    main()
