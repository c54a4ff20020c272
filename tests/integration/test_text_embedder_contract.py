"""The text embedder port's contract, run against all-MiniLM-L6-v2 (real, from its package), the hashing
embedder, and OpenAI embeddings (on a fake server on 127.0.0.1)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from tests.support.adapters import FakeModelServer, fake_model_server
from tests.support.harness import make_settings
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.memory.embedding.port import TextEmbedder
from worldmm.memory.embedding.providers import (
    EmbedderConfigurationError,
    MiniLMEmbedder,
    OpenAIEmbedder,
    build_text_embedder,
    default_minilm_path,
)

pytestmark = pytest.mark.integration


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def server() -> Iterator[FakeModelServer]:
    with fake_model_server() as fake:
        yield fake


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    """The real all-MiniLM-L6-v2, loaded once for the module."""
    embedder = build_text_embedder(make_settings(embedding_provider="local", embedding_dim=384))
    assert isinstance(embedder, MiniLMEmbedder)
    return embedder


@pytest.fixture(params=["minilm", "hash", "openai"])
def embedder(request: pytest.FixtureRequest) -> TextEmbedder:
    if request.param == "minilm":
        real: MiniLMEmbedder = request.getfixturevalue("minilm")
        return real
    if request.param == "hash":
        return HashEmbedder(64)
    server: FakeModelServer = request.getfixturevalue("server")
    return OpenAIEmbedder(
        model="text-embedding-3-large", dim=64, api_key="k", base_url=server.url + "/v1", batch_size=2
    )


def test_text_embedder_returns_one_unit_vector_of_its_dimension_per_text(embedder: TextEmbedder) -> None:
    texts = ["Alice put the keys on the kitchen table", "a red mug", "Bob", ""]
    vectors = embedder.embed(texts)
    assert len(vectors) == len(texts)
    assert all(len(v) == embedder.dim for v in vectors)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-4) for v in vectors)


def test_text_embedder_is_deterministic_and_order_preserving(embedder: TextEmbedder) -> None:
    texts = ["coffee with Bob", "walking the dog", "coffee with Bob"]
    first = embedder.embed(texts)
    # Each text's vector does not depend on its neighbours or its position in the call.
    alone = [embedder.embed([t])[0] for t in texts]
    for a, b in zip(first, alone, strict=True):
        assert _cosine(a, b) > 0.9999
    assert _cosine(first[0], first[2]) > 0.9999
    assert _cosine(first[0], first[1]) < 0.99


def test_text_embedder_of_no_texts_is_empty(embedder: TextEmbedder) -> None:
    assert embedder.embed([]) == []


def test_minilm_embeds_in_384_dimensions_with_similar_sentences_closer(minilm: MiniLMEmbedder) -> None:
    # GIVEN two paraphrases and an unrelated sentence
    cat, kitten, taxes = minilm.embed(
        ["A cat is sleeping on the sofa.", "A kitten naps on the couch.", "The quarterly tax report is due."]
    )
    # THEN the model is the 384-d MiniLM and paraphrases are closer than unrelated text
    assert minilm.dim == 384 and len(cat) == 384
    assert _cosine(cat, kitten) > _cosine(cat, taxes) + 0.3


def test_minilm_with_a_different_embedding_dim_is_a_clear_configuration_error() -> None:
    with pytest.raises(EmbedderConfigurationError, match="384"):
        MiniLMEmbedder(default_minilm_path(), expected_dim=1536)


def test_a_smaller_embedding_dim_keeps_the_first_dimensions_as_unit_vectors() -> None:
    # GIVEN the 384-d model asked for 128 dimensions (the Matryoshka way of shortening a vector)
    short = MiniLMEmbedder(default_minilm_path(), expected_dim=128)
    full = MiniLMEmbedder(default_minilm_path(), expected_dim=384)
    text = ["A cat is sleeping on the sofa."]
    # WHEN a text is embedded by both
    (vector,), (whole,) = short.embed(text), full.embed(text)
    # THEN the short vector is the whole one's first 128 dimensions, renormalised to unit length
    assert short.dim == 128 and len(vector) == 128
    assert abs(sum(v * v for v in vector) - 1.0) < 1e-5
    head = whole[:128]
    norm = sum(v * v for v in head) ** 0.5
    assert all(abs(a - b / norm) < 1e-5 for a, b in zip(vector, head, strict=True))


def test_openai_embedder_batches_requests_and_asks_for_the_configured_dimensions(
    server: FakeModelServer,
) -> None:
    # GIVEN a batch size of 2 and five texts
    embedder = OpenAIEmbedder(
        model="text-embedding-3-large", dim=32, api_key="k", base_url=server.url + "/v1", batch_size=2
    )
    before = len(server.calls("/v1/embeddings"))
    # WHEN they are embedded
    vectors = embedder.embed([f"text {i}" for i in range(5)])
    # THEN three requests carried 2+2+1 inputs with dimensions=32, and vectors follow the input order
    calls = server.calls("/v1/embeddings")[before:]
    assert [len(c.json["input"]) for c in calls] == [2, 2, 1]
    assert {c.json["dimensions"] for c in calls} == {32}
    assert {c.json["model"] for c in calls} == {"text-embedding-3-large"}
    expected = HashEmbedder(32).embed([f"text {i}" for i in range(5)])
    assert all(_cosine(v, e) > 0.9999 for v, e in zip(vectors, expected, strict=True))


def test_openai_embedder_retries_rate_limits(server: FakeModelServer) -> None:
    server.fail_next("/v1/embeddings", 429)
    embedder = OpenAIEmbedder(model="m", dim=8, api_key="k", base_url=server.url + "/v1", max_retries=2)
    before = len(server.calls("/v1/embeddings"))
    assert len(embedder.embed(["hello"])) == 1
    assert len(server.calls("/v1/embeddings")) - before == 2


def test_build_text_embedder_chooses_by_provider() -> None:
    assert isinstance(build_text_embedder(make_settings(embedding_provider="hash")), HashEmbedder)
    openai = build_text_embedder(make_settings(embedding_provider="openai", openai_api_key="k"))
    assert isinstance(openai, OpenAIEmbedder) and openai.dim == 8
    with pytest.raises(EmbedderConfigurationError):
        build_text_embedder(make_settings(embedding_provider="word2vec"))
