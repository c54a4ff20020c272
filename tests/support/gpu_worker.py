"""A tiny randomly initialised Qwen2-VL checkpoint (VLM2Vec-V2's architecture) built offline for tests."""

from __future__ import annotations

import base64
import io
import threading
from pathlib import Path
from typing import Any

TOKEN = "test-worker-secret"
HIDDEN = 32
SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_qwen2vl(path: Path) -> Path:
    """Save a 2-layer, hidden-32 Qwen2-VL with a byte-level tokenizer and image processor to `path`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessorPil,
    )

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(SPECIALS)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    ids: dict[str, int] = {s: int(tokenizer.convert_tokens_to_ids(s)) for s in SPECIALS}  # type: ignore[arg-type]
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": HIDDEN,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 4096,
            "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]},
            "bos_token_id": None,
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 1,
            "embed_dim": 16,
            "hidden_size": HIDDEN,
            "num_heads": 2,
            "mlp_ratio": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(0)
    Qwen2VLForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=56 * 56).save_pretrained(path)
    return path


def worker_settings(model_dir: Path, **overrides: object):
    """Worker settings for the tiny model: small frames, dimension 8 (the test Settings' visual dim)."""
    from gpu_worker.settings import WorkerSettings

    values: dict[str, Any] = {
        "model_dir": model_dir,
        "model_id": "tiny-qwen2vl",
        "generation_model_dir": model_dir,
        "token": TOKEN,
        "embedding_dim": 8,
        "video_min_pixels": 56 * 56,
        "video_max_pixels": 56 * 56,
        "image_max_pixels": 56 * 56,
        "max_frames": 16,
        "max_request_bytes": 512 * 1024,
        "max_new_tokens": 8,
        "device": "cpu",
        "batch_wait_ms": 20.0,
    }
    values.update(overrides)
    return WorkerSettings(**values)


def jpeg_bytes(seed: int, size: tuple[int, int] = (80, 64)) -> bytes:
    """A random-noise JPEG frame."""
    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG")
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def gated_loader(gate: threading.Event):
    """The real model loader, held until `gate` is set (to observe the 'loading' state)."""
    from gpu_worker.app import load_models

    def load(settings):
        gate.wait(timeout=60)
        return load_models(settings)

    return load
