"""VLM2Vec-V2 embeddings and optional generation, computed the way the VLM2Vec authors compute them.

Reference: TIGER-AI-Lab/VLM2Vec (`src/model/model.py` MMEBModel, `src/model/processor.py`) and the
VLM2Vec-V2.0 model card. The embedding of an input is:

1. the prompt `process_input_text(instruction, text, add_video_token)` builds: for a clip
   `"<|video_pad|> " + instruction` (the bare video token, no vision start/end markers), for a query
   `instruction + " " + text`; instructions are the MMEB-V2 text-to-video retrieval pair
   ("Find a video that contains the following visual content:" / "Understand the content of the
   provided video."), configurable in WorkerSettings;
2. the Qwen2-VL backbone (`Qwen2VLForConditionalGeneration`, LoRA already merged into the weights)
   run on the left-padded batch; the last layer's hidden states (after the final norm);
3. last-token pooling (`pooling='last'`): the hidden state of each sequence's final token;
4. L2 normalisation (`normalize=True`), computed in float32.

Dimension: VLM2Vec-V2.0 is built on Qwen2-VL-2B whose hidden size is 1536, the production
`embedding_dim`, so nothing is changed. Only when a different backbone is configured with a larger
hidden size than `embedding_dim` do we keep the first `embedding_dim` components and L2-normalise again
(a dev/test convenience; VLM2Vec is not Matryoshka-trained, so this loses quality and is logged). A
hidden size smaller than `embedding_dim` is a configuration error: loading fails.

Video frames are turned into Qwen2-VL patches here (`frames_to_patches`), reproducing
`Qwen2VLVideoProcessor` (smart resize to multiples of patch*merge, CLIP mean/std normalisation, frames
padded to a multiple of the temporal patch by repeating the last, the same patch order) so the worker
needs only PIL and numpy for preprocessing; the per-frame pixel bounds default to the authors' clip
settings (qwen-vl-utils' 128*28*28 floor, `max_pixels=360*420`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gpu_worker.settings import WorkerSettings

if TYPE_CHECKING:
    import torch
    from PIL.Image import Image

logger = logging.getLogger("gpu_worker.model")

VIDEO_TOKEN = "<|video_pad|>"
IMAGE_TOKEN = "<|image_pad|>"
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclass(frozen=True)
class PatchConfig:
    """The Qwen2-VL vision geometry and normalisation read from a checkpoint's preprocessor config."""

    patch_size: int = 14
    merge_size: int = 2
    temporal_patch_size: int = 2
    image_mean: tuple[float, float, float] = CLIP_MEAN
    image_std: tuple[float, float, float] = CLIP_STD

    @property
    def factor(self) -> int:
        return self.patch_size * self.merge_size


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen2-VL's resize rule: sides divisible by `factor`, area within bounds, aspect ratio kept."""
    if min(height, width) <= 0 or max(height, width) / min(height, width) > 200:
        raise ValueError(f"unsupported frame size {width}x{height}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def frames_to_patches(
    frames: list[Image], config: PatchConfig, min_pixels: int, max_pixels: int
) -> tuple[np.ndarray, tuple[int, int, int]]:
    """A clip's frames as flattened Qwen2-VL video patches `(t*h*w, C*T*P*P)` and its grid `(t, h, w)`."""
    from PIL import Image as PILImage

    if not frames:
        raise ValueError("a clip needs at least one frame")
    first = frames[0]
    height, width = smart_resize(first.height, first.width, config.factor, min_pixels, max_pixels)
    mean = np.asarray(config.image_mean, dtype=np.float32).reshape(1, 3, 1, 1)
    std = np.asarray(config.image_std, dtype=np.float32).reshape(1, 3, 1, 1)
    stack = np.stack(
        [
            np.asarray(
                frame.convert("RGB").resize((width, height), PILImage.Resampling.BICUBIC), dtype=np.float32
            ).transpose(2, 0, 1)
            for frame in frames
        ]
    )
    stack = (stack / 255.0 - mean) / std
    tps, ps, ms = config.temporal_patch_size, config.patch_size, config.merge_size
    if pad := -len(frames) % tps:
        stack = np.concatenate([stack, np.repeat(stack[-1:], pad, axis=0)])
    channel = stack.shape[1]
    grid_t, grid_h, grid_w = stack.shape[0] // tps, height // ps, width // ps
    patches = stack.reshape(grid_t, tps, channel, grid_h // ms, ms, ps, grid_w // ms, ms, ps)
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flat = patches.reshape(grid_t * grid_h * grid_w, channel * tps * ps * ps)
    return np.ascontiguousarray(flat), (grid_t, grid_h, grid_w)


def resolve_device(setting: str) -> str:
    """'auto' → cuda when torch sees one, else cpu."""
    import torch

    if setting == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return setting


def resolve_dtype(setting: str, device: str) -> torch.dtype:
    """'auto' → bfloat16 on cuda (as the authors run it), float32 on cpu."""
    import torch

    if setting == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    dtype = getattr(torch, setting, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {setting!r}")
    return dtype


def _patch_config(image_processor: Any) -> PatchConfig:
    return PatchConfig(
        patch_size=int(getattr(image_processor, "patch_size", 14)),
        merge_size=int(getattr(image_processor, "merge_size", 2)),
        temporal_patch_size=int(getattr(image_processor, "temporal_patch_size", 2)),
        image_mean=tuple(getattr(image_processor, "image_mean", CLIP_MEAN)),
        image_std=tuple(getattr(image_processor, "image_std", CLIP_STD)),
    )


def _load_vlm(path: Path, settings: WorkerSettings) -> tuple[Any, Any, Any, str]:
    """Load a Qwen2-VL style checkpoint: (model, tokenizer, image processor, device)."""
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer

    device = resolve_device(settings.device)
    kwargs: dict[str, Any] = {"dtype": resolve_dtype(settings.dtype, device)}
    if settings.attn_implementation:
        kwargs["attn_implementation"] = settings.attn_implementation
    model: Any = AutoModelForImageTextToText.from_pretrained(str(path), local_files_only=True, **kwargs)
    model.eval()
    model.to(device)
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    image_processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True)
    return model, tokenizer, image_processor, device


class VLM2VecEmbedder:
    """Clips and query texts → L2-normalised VLM2Vec-V2 embeddings in one space."""

    def __init__(
        self, model: Any, tokenizer: Any, image_processor: Any, device: str, settings: WorkerSettings
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.device = device
        self.settings = settings
        self.model_id = settings.model_id
        self.patch_config = _patch_config(image_processor)
        self.hidden_size = int(model.config.get_text_config().hidden_size)
        self.dim = settings.embedding_dim or self.hidden_size
        if self.hidden_size < self.dim:
            raise ValueError(
                f"backbone hidden size {self.hidden_size} is smaller than embedding_dim {self.dim}"
            )
        if self.hidden_size > self.dim:
            logger.warning(
                "embedding truncated: hidden %d > embedding_dim %d (leading components kept, renormalised)",
                self.hidden_size,
                self.dim,
            )
        self.video_token_id = int(tokenizer.convert_tokens_to_ids(VIDEO_TOKEN))
        self.image_token_id = int(tokenizer.convert_tokens_to_ids(IMAGE_TOKEN))

    @classmethod
    def load(cls, settings: WorkerSettings) -> VLM2VecEmbedder:
        """Load weights, tokenizer and preprocessor from `settings.model_dir` (never downloads)."""
        if settings.model_dir is None:
            raise ValueError("WORKER_MODEL_DIR is not set")
        model, tokenizer, image_processor, device = _load_vlm(settings.model_dir, settings)
        return cls(model, tokenizer, image_processor, device, settings)

    def video_prompt(self, n_video_tokens: int) -> str:
        """The authors' clip prompt with the video token expanded to the clip's merged patch count."""
        return f"{VIDEO_TOKEN * n_video_tokens} {self.settings.video_instruction}"

    def text_prompt(self, text: str) -> str:
        """The authors' query prompt: instruction, a space, the query."""
        return f"{self.settings.text_instruction} {text}"

    def encode_videos(self, clips: list[list[Image]]) -> np.ndarray:
        """One embedding per clip, shape (len(clips), dim)."""
        import torch

        merge = self.patch_config.merge_size**2
        patches, grids, prompts = [], [], []
        for frames in clips:
            flat, grid = frames_to_patches(
                frames, self.patch_config, self.settings.video_min_pixels, self.settings.video_max_pixels
            )
            patches.append(flat)
            grids.append(grid)
            prompts.append(self.video_prompt(int(np.prod(grid)) // merge))
        batch = self._tokenize(prompts)
        batch["pixel_values_videos"] = torch.from_numpy(np.concatenate(patches)).to(
            self.device, dtype=self.model.dtype
        )
        batch["video_grid_thw"] = torch.tensor(grids, dtype=torch.long, device=self.device)
        return self._embed(batch)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """One embedding per query text, shape (len(texts), dim)."""
        return self._embed(self._tokenize([self.text_prompt(t) for t in texts]))

    def _tokenize(self, prompts: list[str]) -> dict[str, Any]:
        enc = self.tokenizer(prompts, padding=True, padding_side="left", return_tensors="pt")
        input_ids, mask = enc["input_ids"], enc["attention_mask"]
        # The authors' prompt carries the bare video token (no <|vision_start|>), for which their
        # Qwen2-VL get_rope_index finds no vision span and gives every token the plain 1-D position;
        # pass those positions explicitly so newer transformers (M-RoPE from token types) match it.
        positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)
        return {
            "input_ids": input_ids.to(self.device),
            "attention_mask": mask.to(self.device),
            "position_ids": positions.unsqueeze(0).expand(3, -1, -1).to(self.device),
            "mm_token_type_ids": mm_token_types(input_ids, self.image_token_id, self.video_token_id).to(
                self.device
            ),
        }

    def _embed(self, batch: dict[str, Any]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            out = self.model(**batch, output_hidden_states=True, return_dict=True, use_cache=False)
            reps = last_token_pool(out.hidden_states[-1], batch["attention_mask"]).float()
            if self.dim < reps.shape[-1]:
                reps = reps[:, : self.dim]
            reps = torch.nn.functional.normalize(reps, p=2, dim=-1)
        return np.asarray(reps.cpu().numpy(), dtype=np.float32)


def mm_token_types(input_ids: torch.Tensor, image_token_id: int, video_token_id: int) -> torch.Tensor:
    """Qwen2-VL token types: 0 text, 1 image placeholder, 2 video placeholder."""
    return (input_ids == image_token_id).long() + 2 * (input_ids == video_token_id).long()


def last_token_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """MMEBModel._pooling('last'): the final position when left-padded, else each row's last real token."""
    import torch

    batch = hidden.shape[0]
    if bool((attention_mask[:, -1].sum() == batch).item()):
        return hidden[:, -1, :]
    last = attention_mask.sum(dim=1) - 1
    return hidden[torch.arange(batch, device=hidden.device), last]


@dataclass(frozen=True)
class Generation:
    """One generated answer and its token counts."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


class Generator:
    """Chat generation from a local checkpoint: a Qwen2-VL style VLM (images allowed) or a causal LM."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        image_processor: Any | None,
        device: str,
        model_id: str,
        settings: WorkerSettings,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.device = device
        self.model_id = model_id
        self.settings = settings
        self.accepts_images = image_processor is not None

    @classmethod
    def load(cls, settings: WorkerSettings, shared: VLM2VecEmbedder | None = None) -> Generator:
        """Load `settings.generation_model_dir`; reuses the embedder's weights when it is the same dir."""
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        path = settings.generation_model_dir
        if path is None:
            raise ValueError("WORKER_GENERATION_MODEL_DIR is not set")
        model_id = settings.generation_model_id or path.name
        if (
            shared is not None
            and settings.model_dir is not None
            and path.resolve() == settings.model_dir.resolve()
        ):
            return cls(
                shared.model, shared.tokenizer, shared.image_processor, shared.device, model_id, settings
            )
        config = AutoConfig.from_pretrained(str(path), local_files_only=True)
        if getattr(config, "vision_config", None) is not None:
            model, tokenizer, image_processor, device = _load_vlm(path, settings)
            return cls(model, tokenizer, image_processor, device, model_id, settings)
        device = resolve_device(settings.device)
        causal: Any = AutoModelForCausalLM.from_pretrained(
            str(path), local_files_only=True, dtype=resolve_dtype(settings.dtype, device)
        )
        causal.eval()
        causal.to(device)
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        return cls(causal, tokenizer, None, device, model_id, settings)

    def generate(
        self,
        messages: list[dict[str, Any]],
        images: list[Image],
        max_new_tokens: int,
        temperature: float | None,
    ) -> Generation:
        """Answer a chat. `messages` use template parts ({"type": "text"|"image"}); `images` in order."""
        import torch

        if images and self.image_processor is None:
            raise ValueError("this generation model does not accept images")
        prompt = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs: dict[str, Any] = {}
        if images and self.image_processor is not None:
            processed = self.image_processor(images=images, return_tensors="pt", **self._image_size_kwargs())
            grid = processed["image_grid_thw"]
            merge = int(getattr(self.image_processor, "merge_size", 2)) ** 2
            pieces = prompt.split(IMAGE_TOKEN)
            if len(pieces) - 1 != len(images):
                raise ValueError("chat template placed a different number of images than were given")
            prompt = pieces[0] + "".join(
                IMAGE_TOKEN * (int(grid[i].prod()) // merge) + pieces[i + 1] for i in range(len(images))
            )
            inputs["pixel_values"] = processed["pixel_values"].to(self.device, dtype=self.model.dtype)
            inputs["image_grid_thw"] = grid.to(self.device)
        enc = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        inputs["input_ids"] = enc["input_ids"].to(self.device)
        inputs["attention_mask"] = enc["attention_mask"].to(self.device)
        if self.accepts_images:
            image_id = int(self.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN))
            video_id = int(self.tokenizer.convert_tokens_to_ids(VIDEO_TOKEN))
            inputs["mm_token_type_ids"] = mm_token_types(enc["input_ids"], image_id, video_id).to(self.device)
        sample = bool(temperature and temperature > 0)
        gen_kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": sample}
        if sample:
            gen_kwargs["temperature"] = temperature
        pad_id = (
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else self.tokenizer.eos_token_id
        )
        with torch.inference_mode():
            output = self.model.generate(**inputs, **gen_kwargs, pad_token_id=pad_id)
        prompt_len = inputs["input_ids"].shape[1]
        new_tokens = output[0, prompt_len:]
        text = self.tokenizer.decode(new_tokens, skip_special_tokens=True)
        eos = self.tokenizer.eos_token_id
        stopped = eos is not None and len(new_tokens) > 0 and int(new_tokens[-1]) == int(eos)
        finish = "stop" if stopped or len(new_tokens) < max_new_tokens else "length"
        return Generation(text, int(prompt_len), len(new_tokens), finish)

    def _image_size_kwargs(self) -> dict[str, Any]:
        size: dict[str, int] = {}
        if self.settings.image_min_pixels:
            size["shortest_edge"] = self.settings.image_min_pixels
        if self.settings.image_max_pixels:
            size["longest_edge"] = self.settings.image_max_pixels
        if not size:
            return {}
        current = getattr(self.image_processor, "size", None)
        merged = {
            "shortest_edge": getattr(current, "shortest_edge", None) or 56 * 56,
            "longest_edge": getattr(current, "longest_edge", None) or 28 * 28 * 1280,
        }
        merged.update(size)
        return {"size": merged}
