"""Local-profile model adapters on this machine: load time and throughput of each (prints JSON).

    python -m bench.bench_local_adapters [--texts 256] [--llm-requests 3]

MiniLM embeddings (texts/s; and seconds for texts of mixed length — the committed EgoLife slice's windows
and their sentences, as ingest and the composer embed them — at each batch size), Whisper tiny.en via
faster-whisper (real-time factor on the test recording), SmolLM2-135M via llama.cpp (schema-constrained
completions: latency and tokens/s).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

SPEECH = Path(__file__).resolve().parents[1] / "tests" / "data" / "speech_keys_alice.wav"
EGOLIFE_WINDOWS = Path(__file__).resolve().parents[1] / "tests" / "data" / "egolife" / "A1_JAKE_windows30s.jsonl"
BATCH_SIZES = (8, 16, 32, 128)


class Triple(BaseModel):
    subject: str
    predicate: str
    object: str


class Triples(BaseModel):
    triples: list[Triple]


def bench_embedder(n_texts: int) -> dict[str, Any]:
    from worldmm.memory.embedding.providers import MiniLMEmbedder, default_minilm_path

    embedder = MiniLMEmbedder(default_minilm_path(), expected_dim=384)
    started = time.perf_counter()
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - started
    texts = [f"Alice put item number {i} on the kitchen table next to the red mug" for i in range(n_texts)]
    started = time.perf_counter()
    embedder.embed(texts)
    elapsed = time.perf_counter() - started
    return {
        "load_s": round(load_s, 2),
        "texts": n_texts,
        "texts_per_s": round(n_texts / elapsed, 1),
        "mixed_lengths": bench_batch_sizes(embedder, n_texts),
    }


def bench_batch_sizes(embedder: Any, n_texts: int) -> dict[str, Any]:
    """Seconds to embed `n_texts` windows and `n_texts` sentences of mixed length at each batch size (the
    default `LOCAL_EMBEDDING_BATCH_SIZE` among them): padding and cache use, not arithmetic, set the cost."""
    from worldmm.config import Settings
    from worldmm.memory.episodic.segment_text import segment_memory_text
    from worldmm.retrieval.sentences import pieces

    rows = [json.loads(line) for line in EGOLIFE_WINDOWS.read_text(encoding="utf-8").splitlines() if line.strip()]
    windows = [segment_memory_text(row["caption"], row.get("transcript", "")) for row in rows][:n_texts]
    sentences = [s for w in windows for s, _ in pieces(w)][:n_texts]
    seconds: dict[str, dict[int, float]] = {"windows": {}, "sentences": {}}
    for batch_size in BATCH_SIZES:
        embedder.batch_size = batch_size
        for name, texts in (("windows", windows), ("sentences", sentences)):
            started = time.perf_counter()
            embedder.embed(texts)
            seconds[name][batch_size] = round(time.perf_counter() - started, 2)
    return {
        "windows": len(windows),
        "window_chars": sum(map(len, windows)),
        "sentences": len(sentences),
        "sentence_chars": sum(map(len, sentences)),
        "default_batch_size": Settings.model_fields["local_embedding_batch_size"].default,
        "seconds_by_batch_size": seconds,
    }


def bench_transcriber() -> dict[str, Any]:
    import wave

    from worldmm.media.transcription.providers import FasterWhisperTranscriber, default_whisper_path

    with wave.open(str(SPEECH)) as w:
        audio_s = w.getnframes() / w.getframerate()
    transcriber = FasterWhisperTranscriber(default_whisper_path())
    audio = SPEECH.read_bytes()
    started = time.perf_counter()
    transcriber.transcribe(audio, "warm.wav")
    first_s = time.perf_counter() - started
    started = time.perf_counter()
    transcript = transcriber.transcribe(audio, "speech.wav")
    elapsed = time.perf_counter() - started
    return {
        "first_call_s": round(first_s, 2),
        "audio_s": round(audio_s, 2),
        "transcribe_s": round(elapsed, 2),
        "real_time_factor": round(elapsed / audio_s, 3),
        "text": transcript.text,
    }


def bench_llm(n_requests: int) -> dict[str, Any]:
    from worldmm.llm.local import LlamaCppLLM, default_gguf_path
    from worldmm.llm.port import LLMRequest
    from worldmm.llm.structured import parse_model

    llm = LlamaCppLLM(default_gguf_path(), n_ctx=2048)
    request = LLMRequest(
        purpose="bench_triples",
        messages=[
            {
                "role": "user",
                "content": "Extract (subject, predicate, object) triples as JSON from: "
                "Alice put her keys on the kitchen table, then Bob made coffee for Alice.",
            }
        ],
        model="local",
        max_tokens=128,
        response_schema=Triples.model_json_schema(),
    )
    started = time.perf_counter()
    llm.complete(request)
    first_s = time.perf_counter() - started
    latencies, tokens, valid = [], 0, 0
    for _ in range(n_requests):
        response = llm.complete(request)
        latencies.append(response.latency_ms / 1000)
        tokens += response.completion_tokens
        try:
            parse_model(response.text, Triples)
            valid += 1
        except Exception:
            pass
    return {
        "first_call_s": round(first_s, 2),
        "requests": n_requests,
        "mean_latency_s": round(sum(latencies) / len(latencies), 2),
        "completion_tokens_per_s": round(tokens / sum(latencies), 1),
        "schema_valid": f"{valid}/{n_requests}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--llm-requests", type=int, default=3)
    args = parser.parse_args()
    result = {
        "embedder_minilm": bench_embedder(args.texts),
        "transcriber_faster_whisper_tiny_en": bench_transcriber(),
        "llm_llama_cpp_smollm2_135m": bench_llm(args.llm_requests),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
