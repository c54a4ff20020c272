"""What one wearer-hour costs: the deployed functions driven through an hour of wear, priced.

Runs template.yaml's functions as Lambda would (tests/deployed: moto server, embedded PostgreSQL through the
database secret, Redis when `--redis`, OpenAI- and Groq-wire model servers on 127.0.0.1) for `--windows`
30-second windows (frames and audio put into the bucket, the upload notifications handled by
CaptureUploadsFunction, each window ingested by IngestWindowFunction with its summaries and consolidation)
and `--chats` questions to ChatFunction. The scripted models answer with outputs of realistic length and
the model server reports usage as the API counts it (text ~4 characters a token; images by the model's
rule in the price file at the stated frame size), so the `worldmm_llm_usage` rows the code writes carry
those counts. Reported per wearer-hour: model calls and tokens by purpose, Whisper minutes, GPU requests,
Lambda GB-seconds (each handler's measured duration x the template's MemorySize; imports excluded),
S3 bytes, PostgreSQL rows and bytes (pg_total_relation_size deltas), Redis bytes; then $ per wearer-hour
and per wearer-month from bench/prices.json, for the configuration as shipped and a cheaper one.

    python -m bench.bench_cost [--windows 120] [--chats 6] [--warmup-windows 0] [--hours-per-day 4]
        [--config shipped cheaper short_vectors]

Prints one JSON object (bench/run_all.py writes it to bench/results/cost.json).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import subprocess
import sys
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from worldmm.ingest.app_events import EVENT_RETENTION_S

ROOT = Path(__file__).resolve().parent.parent
PRICES = ROOT / "bench" / "prices.json"
WINDOW_S = 30

CONFIGS: dict[str, dict[str, str]] = {
    # The environment each configuration adds to every function (what the template would set).
    "shipped": {},
    "cheaper": {"CAPTION_FRAMES": "2", "GROQ_MODEL": "whisper-large-v3-turbo"},
    "short_vectors": {},
}
PARAMETERS: dict[str, dict[str, str]] = {
    # The template parameters a configuration deploys with (the database is migrated to match).
    "short_vectors": {"EmbeddingDim": "512"},
}
RETAINED_DAYS = {"worldmm_event_outbox": EVENT_RETENTION_S / 86_400}
"""Tables whose rows are pruned after a retention: their bytes stop growing after it (worldmm/ingest/app_events)."""
CONFIG_NOTES = {
    "shipped": "template.yaml defaults",
    "cheaper": "CAPTION_FRAMES=2 (2 of the 16 sampled frames go to the captioner instead of 4); "
    "GROQ_MODEL=whisper-large-v3-turbo",
    "short_vectors": "EmbeddingDim=512 (text-embedding-3-large's `dimensions`; captions, entities and semantic "
    "facts embedded in 512 dimensions instead of 1536)",
}

CAPTION = (
    "I stand at the kitchen counter with Kate while she pours tea into a red mug; a laptop is open beside the "
    "kettle and the window shows rain. Kate asks whether I want milk and mentions the train to Lyon on Friday; "
    "I answer that I still have to book the tickets and check the hotel near the station."
)
SUMMARY = (
    "I spent these minutes in the kitchen with Kate making tea and planning the Friday trip to Lyon: we talked "
    "about the train times, that I still have to book tickets and the hotel near the station, and Kate offered "
    "to lend me her umbrella because of the rain. I kept the laptop open on the counter and checked my calendar "
    "for the meeting with Marc on Thursday afternoon before we left."
)
ANSWER = (
    "You were with Kate in the kitchen around 10:05; she poured tea into a red mug and you talked about the "
    "Friday train to Lyon. You said you still had to book the tickets and the hotel near the station."
)


def _frame(width: int, height: int, seed: int) -> bytes:
    """A real JPEG of the stated size with some texture (its bytes are what S3 stores per frame)."""
    from PIL import Image, ImageDraw

    image = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    draw = ImageDraw.Draw(image)
    for i in range(60):
        x, y = (seed * 97 + i * 211) % width, (seed * 53 + i * 131) % height
        draw.rectangle((x, y, x + 40 + i % 50, y + 30 + i % 40), fill=((i * 37) % 256, (seed * 11) % 256, 120))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=80)
    return out.getvalue()


def _wav(seconds: float) -> bytes:
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x00\x01" * int(16000 * seconds))
    return out.getvalue()


def image_tokens(rule: dict[str, Any], width: int, height: int) -> int:
    """Input tokens one image costs, by the model's published rule (patches or tiles)."""
    if rule["rule"] == "patches":
        patches = min(math.ceil(width / rule["patch_px"]) * math.ceil(height / rule["patch_px"]), rule["max_patches"])
        return math.ceil(patches * rule["multiplier"])
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return int(rule["base"] + rule["per_tile"] * math.ceil(w / rule["tile_px"]) * math.ceil(h / rule["tile_px"]))


def text_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


class Meter:
    """Counts what the model servers were asked, as the API would bill it, and reports it as usage."""

    def __init__(self, prices: dict[str, Any], frame_px: tuple[int, int]) -> None:
        self.prices = prices
        self.frame_px = frame_px
        self.by_purpose: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
        self.embedding: dict[str, int] = defaultdict(int)

    def chat(self, body: dict[str, Any], reply: str) -> dict[str, int]:
        purpose = (body.get("response_format") or {}).get("json_schema", {}).get("name", "unstructured")
        model = body["model"]
        rule = self.prices["models"].get(model, {}).get("image_tokens")
        texts, images = [], 0
        for message in body["messages"]:
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                for part in content:
                    if part.get("type") == "text":
                        texts.append(part["text"])
                    elif part.get("type") == "image_url":
                        images += 1
        system = "".join(
            m["content"] for m in body["messages"] if m.get("role") == "system" and isinstance(m["content"], str)
        )
        text = text_tokens("\n".join(texts))
        image = images * image_tokens(rule, *self.frame_px) if rule and images else 0
        output = text_tokens(reply)
        # Prompt caching: an identical prefix of >= 1024 tokens (the system prompt here) is billed as cached.
        cached = text_tokens(system) if text_tokens(system) >= 1024 else 0
        row = self.by_purpose[purpose]
        row["model"] = model
        row["calls"] += 1
        row["images"] += images
        row["input_tokens"] += text + image
        row["image_tokens"] += image
        row["cached_input_tokens"] += cached
        row["output_tokens"] += output
        return {"prompt_tokens": text + image, "completion_tokens": output, "total_tokens": text + image + output}

    def embed(self, body: dict[str, Any]) -> int:
        inputs = body.get("input")
        items = inputs if isinstance(inputs, list) else [inputs]
        tokens = sum(text_tokens(str(t)) for t in items)
        self.embedding["calls"] += 1
        self.embedding["inputs"] += len(items)
        self.embedding["tokens"] += tokens
        self.embedding["model"] = body.get("model")  # type: ignore[assignment]
        return tokens


def _realistic(scripted: Any) -> None:
    """Answers of the length a real model gives (a caption of ~3 sentences, ~8 entities and triples, ...)."""
    people = ["I", "Kate", "Marc", "kitchen", "red mug", "laptop", "Lyon", "train", "hotel"]
    triples = [
        ["I", "talk with", "Kate"],
        ["Kate", "pours", "tea"],
        ["tea", "is in", "red mug"],
        ["I", "stand in", "kitchen"],
        ["I", "plan trip to", "Lyon"],
        ["I", "must book", "train tickets"],
        ["I", "must book", "hotel"],
        ["laptop", "is on", "counter"],
    ]
    llm = scripted.llm
    llm.script("caption", {"caption": CAPTION})
    llm.script("ner", {"entities": people})
    llm.script("episodic_triples", {"triples": triples})
    llm.script("merge_captions", {"summary": SUMMARY})
    llm.script("semantic_triples", {"triples": triples[:5]})
    llm.script("response", {"answer": ANSWER})


def _table_sizes(admin_url: str) -> dict[str, dict[str, int]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url)
    with engine.connect() as conn:
        tables = conn.execute(
            text(
                "SELECT c.relname, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')"
            )
        ).all()
        sizes = {}
        for name, oid in tables:
            rows = conn.execute(text(f'SELECT count(*) FROM "{name}"')).scalar_one()
            size = conn.execute(text("SELECT pg_total_relation_size(:oid)"), {"oid": oid}).scalar_one()
            sizes[name] = {"rows": int(rows), "bytes": int(size)}
    engine.dispose()
    return sizes


_RELATIONS_SQL = """
SELECT c.relname AS table_name, 'heap' AS part, pg_relation_size(c.oid) AS bytes
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
UNION ALL
SELECT c.relname, 'toast', pg_total_relation_size(c.reltoastrelid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.reltoastrelid <> 0
UNION ALL
SELECT t.relname, 'index ' || i.relname, pg_relation_size(i.oid)
FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = 'public'
"""


def _relation_sizes(admin_url: str) -> dict[str, dict[str, int]]:
    """Bytes of every table's heap, its TOAST (with the TOAST index) and each of its indexes."""
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url)
    sizes: dict[str, dict[str, int]] = defaultdict(dict)
    with engine.connect() as conn:
        for table, part, size in conn.execute(text(_RELATIONS_SQL)):
            sizes[table][part] = int(size)
    engine.dispose()
    return dict(sizes)


def relation_table(relations: dict[str, dict[str, int]], scale: float = 1.0) -> str:
    """A markdown table of the bytes each table part added (per wearer-hour with `scale`)."""
    lines = ["| table | part | bytes |", "|---|---|---:|"]
    for table, parts in sorted(relations.items()):
        for part, size in sorted(parts.items(), key=lambda p: (p[0] != "heap", p[0] != "toast", p[0])):
            if size:
                lines.append(f"| {table} | {part} | {int(size * scale):,} |")
    return "\n".join(lines)


def _usage_rows(admin_url: str, user: str) -> dict[str, dict[str, int]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT purpose, count(*), sum(prompt_tokens), sum(completion_tokens) FROM worldmm_llm_usage "
                "WHERE user_id = :u GROUP BY purpose"
            ),
            {"u": user},
        ).all()
    engine.dispose()
    return {p: {"calls": int(n), "prompt_tokens": int(i or 0), "completion_tokens": int(o or 0)} for p, n, i, o in rows}


def _bucket_bytes(stack: Any) -> tuple[int, int]:
    s3 = stack.client("s3")
    total = count = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=stack.physical["FramesBucket"]):
        for obj in page.get("Contents", []):
            total += obj["Size"]
            count += 1
    return total, count


def drive_hour(emulated: Any, meter: Meter, args: argparse.Namespace, extra_env: dict[str, str]) -> dict[str, Any]:
    """One wearer-hour through the deployed functions; returns what it took."""
    from tests.deployed.emulators import backdate_session
    from tests.deployed.test_deployed_flow import sqs_event
    from tests.support.capture import http_event

    stack = emulated.stack
    runs_before = len(stack.runs)
    user = f"cost-{uuid.uuid4()}"
    tables_before = _table_sizes(emulated.pg.admin_url)
    relations_before = _relation_sizes(emulated.pg.admin_url)
    s3_before, _ = _bucket_bytes(stack)
    puts = 0

    def invoke(function: str, event: Any) -> Any:
        return stack.invoke(function, event, extra_env=extra_env).result

    started = invoke("CaptureStartFunction", http_event("POST", "/sessions", sub=user))
    session = json.loads(started["body"])["sessionId"]
    backdate_session(stack, session, WINDOW_S * args.windows + 60)
    s3 = stack.client("s3")
    bucket = stack.physical["FramesBucket"]
    audio = _wav(WINDOW_S)
    frames = [_frame(*args.frame_px, seed) for seed in range(8)]
    for window in range(args.windows):
        prefix = f"sessions/{session}/window_{window}/"
        for i in range(args.frames):
            s3.put_object(Bucket=bucket, Key=f"{prefix}frame_{i:04d}.jpg", Body=frames[(window + i) % len(frames)])
        s3.put_object(Bucket=bucket, Key=f"{prefix}audio.wav", Body=audio)
        puts += args.frames + 1
        uploads = sqs_event(stack, "UploadEventsQueue")
        if uploads["Records"]:
            invoke("CaptureUploadsFunction", uploads)
        event = {"sessionId": session, "userId": user, "windowIndex": window, "frameCount": args.frames}
        result = invoke("IngestWindowFunction", event)
        if result.get("status") != "ok":
            raise AssertionError(f"window {window}: {result}")
    emulated.lambda_service.take()  # the async invokes the capture path asked for: driven above instead
    invoke(
        "CaptureEndFunction", http_event("POST", f"/sessions/{session}/end", sub=user, path_parameters={"id": session})
    )
    for n in range(args.chats):
        question = ["Who did I talk with in the kitchen?", "What do I still have to book for Lyon?"][n % 2]
        answer = invoke("ChatFunction", http_event("POST", "/memories/chat", sub=user, body={"question": question}))
        if answer["statusCode"] != 200:
            raise AssertionError(f"chat {n}: {answer}")
    tables_after = _table_sizes(emulated.pg.admin_url)
    relations_after = _relation_sizes(emulated.pg.admin_url)
    s3_after, _ = _bucket_bytes(stack)
    runs = stack.runs[runs_before:]
    lambda_by_function: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for run in runs:
        props = stack.functions()[run.function]
        memory_mb = int(props.get("MemorySize", stack.template["Globals"]["Function"]["MemorySize"]))
        row = lambda_by_function[run.function]
        row["invocations"] += 1
        row["memory_mb"] = memory_mb
        row["handler_s"] += run.handler_s
        row["gb_s"] += run.handler_s * memory_mb / 1024
    postgres = {
        name: {
            "rows": after["rows"] - tables_before.get(name, {}).get("rows", 0),
            "bytes": after["bytes"] - tables_before.get(name, {}).get("bytes", 0),
        }
        for name, after in tables_after.items()
    }
    return {
        "user": user,
        "lambda": {k: {m: round(v, 4) for m, v in row.items()} for k, row in sorted(lambda_by_function.items())},
        "s3": {"bytes_written": s3_after - s3_before, "puts": puts},
        "postgres": {k: v for k, v in sorted(postgres.items()) if v["rows"] or v["bytes"]},
        # the bytes each table's heap, TOAST and indexes added: where a wearer-hour's bytes are
        "postgres_relations": {
            table: delta
            for table, parts in sorted(relations_after.items())
            if (
                delta := {
                    part: size - relations_before.get(table, {}).get(part, 0)
                    for part, size in parts.items()
                    if size - relations_before.get(table, {}).get(part, 0)
                }
            )
        },
    }


def _redis_bytes(url: str | None, user: str) -> int:
    if url is None:
        return 0
    import redis

    client = redis.Redis.from_url(url)
    try:
        return sum(int(client.memory_usage(key) or 0) for key in client.scan_iter(match=f"*{user}*"))
    finally:
        client.close()


INTERACTIVE = {"reasoning_agent", "response", "cross_scale_rerank"}
"""Purposes the chat functions call (answered directly); the rest are made by IngestWindowFunction."""


def price(measured: dict[str, Any], prices: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """$ per wearer-hour by line (scaled to 120 windows), direct and with the Batch API for ingest's purposes."""
    scale = 120 / measured["windows"]
    lines: dict[str, float] = {}
    batchable = 0.0
    for purpose, row in measured["models"].items():
        model = prices["models"].get(row["model"])
        if model is None:
            raise KeyError(f"no price for model {row['model']!r} (bench/prices.json)")
        uncached = row["input_tokens"] - row["cached_input_tokens"]
        cost = (
            uncached * model["input_per_1m_tokens"]
            + row["cached_input_tokens"] * model["cached_input_per_1m_tokens"]
            + row["output_tokens"] * model["output_per_1m_tokens"]
        ) / 1e6
        if purpose in INTERACTIVE:  # chats are counted per wearer-hour already (--chats)
            lines[f"model:{purpose}"] = cost
        else:
            lines[f"model:{purpose}"] = cost * scale
            batchable += cost * scale * model["batch_discount"]
    emb = measured["embeddings"]
    if emb.get("tokens"):
        lines["embeddings"] = emb["tokens"] * prices["models"][emb["model"]]["input_per_1m_tokens"] / 1e6 * scale
    whisper = prices["whisper"]
    billed_s = measured["whisper"]["requests"] * max(WINDOW_S, whisper["min_billed_s_per_request"])
    lines["whisper"] = billed_s / 3600 * whisper["per_audio_hour_by_model"][measured["whisper"]["model"]] * scale
    lam = prices["lambda"]
    for group, functions in measured["lambda_gb_s_by_group"].items():
        cost = functions["gb_s"] * lam["per_gb_second"] + functions["invocations"] * lam["per_1m_requests"] / 1e6
        lines[f"lambda:{group}"] = cost if group == "chat" else cost * scale
    lines["s3_puts"] = measured["s3"]["puts"] * prices["s3"]["put_per_1000_requests"] / 1000 * scale
    variable = sum(lines.values())
    gpu = prices["gpu"]["per_instance_hour"] * args.gpu_hours_per_worn_hour / args.gpu_shared_by
    month_hours = args.hours_per_day * prices["assumptions"]["days_per_month"]
    # Storage is kept: a month of wear adds month_hours of bytes, billed for (on average) half the month.
    gb = 1024**3
    s3_gb, pg_gb = measured["s3"]["bytes_written"] * scale / gb, measured["postgres_bytes"] * scale / gb
    storage_month = (
        month_hours
        * (s3_gb * prices["s3"]["standard_per_gb_month"] + pg_gb * prices["rds_postgres"]["gp3_storage_per_gb_month"])
        / 2
        + measured["redis_bytes"] * scale / gb * prices["elasticache_redis"]["per_gb_month_derived"]
    )
    ranked = sorted({**lines, "gpu_worker": gpu}.items(), key=lambda kv: -kv[1])
    return {
        "lines_usd_per_wearer_hour": {k: round(v, 6) for k, v in ranked},
        "top3": [k for k, _ in ranked[:3]],
        "variable_usd_per_wearer_hour": round(variable, 5),
        "variable_usd_per_wearer_hour_batch_api": round(variable - batchable, 5),
        "gpu_usd_per_wearer_hour": round(gpu, 5),
        "storage_usd_per_wearer_month": round(storage_month, 4),
        "variable_usd_per_wearer_month": round(variable * month_hours + storage_month, 2),
        "total_usd_per_wearer_month": round((variable + gpu) * month_hours + storage_month, 2),
        "month_assumes": f"{args.hours_per_day} h of wear a day x {prices['assumptions']['days_per_month']} days; "
        f"the GPU worker billed {args.gpu_hours_per_worn_hour} h per hour worn, shared by {args.gpu_shared_by} "
        "wearer(s); the month's stored bytes billed for half the month",
    }


def run_config(name: str, args: argparse.Namespace, prices: dict[str, Any], redis_url: str | None) -> dict[str, Any]:
    from tests.deployed.emulators import emulated_stack
    from worldmm.config import Settings

    meter = Meter(prices, tuple(args.frame_px))  # type: ignore[arg-type]
    overrides = {**PARAMETERS.get(name, {}), **({"RedisUrl": redis_url} if redis_url else {})}
    with emulated_stack(**overrides) as emulated:
        _realistic(emulated.scripted)
        reply = emulated.scripted.reply
        server = emulated.server

        def completion(body: dict[str, Any]) -> dict[str, Any]:
            text = reply(body)
            return {
                "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": meter.chat(body, text),
            }

        original_embeddings = server._embeddings

        def embeddings(body: dict[str, Any]) -> dict[str, Any]:
            tokens = meter.embed(body)
            answer = original_embeddings(body)
            answer["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
            return answer

        server.completion = completion
        server._embeddings = embeddings
        server.transcription = {
            "text": " Kate: do you want milk? Me: yes please. We still have to book the train to Lyon.",
            "segments": [{"id": 0, "start": 0.0, "end": 25.0, "text": " Kate: do you want milk? Me: yes please."}],
        }
        if args.warmup_windows:  # another wearer first: pages a first hour would allocate are not counted
            warmup = argparse.Namespace(**{**vars(args), "windows": args.warmup_windows, "chats": 0})
            drive_hour(emulated, meter, warmup, CONFIGS[name])
            meter.by_purpose.clear()
            meter.embedding.clear()
        transcribed_before = len(server.calls("/openai/v1/audio/transcriptions"))
        hour = drive_hour(emulated, meter, args, CONFIGS[name])
        transcriptions = len(server.calls("/openai/v1/audio/transcriptions")) - transcribed_before
        usage = _usage_rows(emulated.pg.admin_url, hour["user"])
    models = {p: dict(r) for p, r in sorted(meter.by_purpose.items())}
    for purpose, row in models.items():
        row["usage_table"] = usage.get(purpose)
    measured = {
        "config": name,
        "config_note": CONFIG_NOTES[name],
        "windows": args.windows,
        "chats": args.chats,
        "models": models,
        "embeddings": dict(meter.embedding),
        "whisper": {
            "requests": transcriptions,
            "minutes": round(transcriptions * WINDOW_S / 60, 2),
            "model": CONFIGS[name].get("GROQ_MODEL", Settings.model_fields["groq_model"].default),
        },
        "gpu": {"visual_encodes": args.windows, "note": "one VLM2Vec clip encode per window; billed as instance hours"},
        **hour,
    }
    measured["postgres_bytes"] = sum(v["bytes"] for v in hour["postgres"].values())
    measured["postgres_rows"] = sum(v["rows"] for v in hour["postgres"].values())
    measured["redis_bytes"] = _redis_bytes(redis_url, hour["user"])
    latency = prices["assumptions"]["model_latency_s_per_call"]
    memory_gb = {f: row["memory_mb"] / 1024 for f, row in hour["lambda"].items()}
    waits = {
        "ChatFunction": sum(r["calls"] for p, r in models.items() if p in INTERACTIVE),
        "IngestWindowFunction": sum(r["calls"] for p, r in models.items() if p not in INTERACTIVE)
        + meter.embedding.get("calls", 0)
        + transcriptions,
    }
    measured["lambda_model_wait_gb_s"] = round(sum(n * latency * memory_gb.get(f, 1.0) for f, n in waits.items()), 3)
    measured["lambda_handler_gb_s"] = round(sum(f["gb_s"] for f in hour["lambda"].values()), 3)
    measured["lambda_gb_s"] = round(measured["lambda_handler_gb_s"] + measured["lambda_model_wait_gb_s"], 3)
    measured["lambda_invocations"] = int(sum(f["invocations"] for f in hour["lambda"].values()))
    groups: dict[str, dict[str, float]] = {
        "ingest": {"gb_s": 0.0, "invocations": 0},
        "chat": {"gb_s": 0.0, "invocations": 0},
    }
    for function, row in hour["lambda"].items():
        group = groups["chat" if function == "ChatFunction" else "ingest"]
        group["gb_s"] += row["gb_s"] + waits.get(function, 0) * latency * memory_gb[function]
        group["invocations"] += row["invocations"]
    measured["lambda_gb_s_by_group"] = {k: {m: round(v, 3) for m, v in g.items()} for k, g in groups.items()}
    measured["usd"] = price(measured, prices, args)
    return measured


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", type=int, default=120, help="30-second windows (120 = one hour)")
    parser.add_argument("--frames", type=int, default=16, help="frames uploaded per window")
    parser.add_argument("--frame-px", type=int, nargs=2, default=None, help="frame size (default: the price file's)")
    parser.add_argument("--chats", type=int, default=6, help="questions asked per wearer-hour")
    parser.add_argument(
        "--warmup-windows",
        type=int,
        default=0,
        help="windows another wearer records first, not measured (each table's first pages are then not "
        "counted as the measured hour's)",
    )
    parser.add_argument("--hours-per-day", type=float, default=4.0)
    parser.add_argument("--gpu-hours-per-worn-hour", type=float, default=1.3, help="bench gpu_schedule's bound")
    parser.add_argument("--gpu-shared-by", type=int, default=1, help="wearers one GPU worker serves at once")
    parser.add_argument("--config", nargs="*", choices=sorted(CONFIGS), default=["shipped", "cheaper"])
    parser.add_argument("--redis", action="store_true", help="set the template's RedisUrl (a real redis-server)")
    parser.add_argument("--prices", type=Path, default=PRICES)
    args = parser.parse_args(argv)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ[name] = "testing"  # emulators only: never a real account
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    prices = json.loads(args.prices.read_text())
    args.frame_px = args.frame_px or prices["assumptions"]["frame_px"]
    results: dict[str, Any] = {}
    if len(args.config) > 1:  # moto's state is per process: each configuration runs in its own
        for name in args.config:
            rest = [a for a in (argv if argv is not None else sys.argv[1:]) if a not in CONFIGS and a != "--config"]
            out = subprocess.run(
                [sys.executable, "-m", "bench.bench_cost", *rest, "--config", name],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=False,
            )
            lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
            if out.returncode != 0 or not lines:
                raise RuntimeError(f"configuration {name} failed:\n{out.stderr[-4000:]}")
            results[name] = json.loads(lines[-1])["configs"][name]
    elif args.redis:
        from tests.support.harness import redis_server

        with redis_server() as url:
            for name in args.config:
                results[name] = run_config(name, args, prices, url)
    else:
        for name in args.config:
            results[name] = run_config(name, args, prices, None)
    report: dict[str, Any] = {
        "bench": "cost",
        "prices_as_of": prices["as_of"],
        "windows": args.windows,
        "warmup_windows": args.warmup_windows,
        "wearer_hours": round(args.windows * WINDOW_S / 3600, 4),
        "configs": results,
    }
    if {"shipped", "cheaper"} <= set(results):
        for key in ("variable_usd_per_wearer_month", "total_usd_per_wearer_month"):
            shipped, cheaper = results["shipped"]["usd"][key], results["cheaper"]["usd"][key]
            report[f"cheaper_saves_{key}"] = round(1 - cheaper / shipped, 4) if shipped else None
    report["growth"] = {name: growth(result, args.hours_per_day) for name, result in results.items()}
    for name, result in results.items():
        print(f"PostgreSQL bytes per wearer-hour by table part ({name}):", file=sys.stderr)
        print(relation_table(result["postgres_relations"], 120 / result["windows"]), file=sys.stderr)
    print(json.dumps(report))
    return report


def growth(measured: dict[str, Any], hours_per_day: float) -> dict[str, Any]:
    """Storage of one wearer's memory after 1, 7, 30, 90 days: extrapolated linearly from this hour's bytes."""
    scale = 120 / measured["windows"]
    pruned = {t: v for t, v in measured["postgres"].items() if t in RETAINED_DAYS}
    per_hour = {
        "s3_bytes": measured["s3"]["bytes_written"] * scale,
        "postgres_bytes": measured["postgres_bytes"] * scale,
        "postgres_rows": measured["postgres_rows"] * scale,
        "redis_bytes": measured["redis_bytes"] * scale,
    }
    kept = {
        "postgres_bytes": (measured["postgres_bytes"] - sum(v["bytes"] for v in pruned.values())) * scale,
        "postgres_rows": (measured["postgres_rows"] - sum(v["rows"] for v in pruned.values())) * scale,
    }

    def held(key: str, d: int) -> int:
        if key not in kept:
            return int(per_hour[key] * hours_per_day * d)
        bounded = sum(
            v[key.removeprefix("postgres_")] * scale * hours_per_day * min(d, RETAINED_DAYS[t])
            for t, v in pruned.items()
        )
        return int(kept[key] * hours_per_day * d + bounded)

    days = {str(d): {k: held(k, d) for k in per_hour} for d in (1, 7, 30, 90)}
    return {
        "method": f"linear extrapolation of one measured wearer-hour at {hours_per_day} h a day (not measured "
        "at those sizes: index and graph-snapshot growth is not linear); tables pruned after a retention "
        f"({', '.join(f'{t}: {d:g} days' for t, d in RETAINED_DAYS.items())}) stop growing after it",
        "per_wearer_hour": {k: int(v) for k, v in per_hour.items()},
        "kept_per_wearer_hour": {k: int(v) for k, v in kept.items()},
        "days": days,
    }


if __name__ == "__main__":
    main()
