"""Batch mode that batches: a backfill's concurrent windows share Batch jobs, with a deadline after
which requests go direct; the live path (build_llm) always calls directly."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.adapters import FakeModelServer, fake_model_server
from tests.support.harness import make_settings
from worldmm.llm.batch import BatchLLM, CollectingBatchLLM, build_backfill_llm
from worldmm.llm.client import DispatchingLLM, OpenAILLM, build_llm
from worldmm.llm.port import LLMRequest

pytestmark = pytest.mark.integration


def _request(text: str, purpose: str = "caption") -> LLMRequest:
    return LLMRequest(purpose=purpose, messages=[{"role": "user", "content": text}], model="gpt-5-mini", max_tokens=32)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with fake_model_server() as fake:
        yield fake


def _collecting(server: FakeModelServer, *, deadline_s: float = 30.0, max_requests: int = 100) -> CollectingBatchLLM:
    direct = OpenAILLM(base_url=server.url + "/v1", api_key="k", max_retries=0)
    return CollectingBatchLLM(
        direct,
        BatchLLM(direct.client, poll_interval_s=0.005),
        max_requests=max_requests,
        linger_s=0.3,
        deadline_s=deadline_s,
    )


def test_concurrent_window_requests_share_one_batch_job(server: FakeModelServer) -> None:
    # GIVEN twelve windows, each on its own thread, asking for their caption at once
    llm = _collecting(server)
    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lambda i: llm.complete(_request(f"window {i}")).text, range(12)))
    # THEN each got its own answer, from one Batch job of twelve requests, and no direct call was made
    assert answers == [f"echo: window {i}" for i in range(12)]
    assert len(server.calls("/v1/batches")) == 1
    assert len(server.batch_input("batch_1")) == 12
    assert server.calls("/v1/chat/completions") == []
    assert llm.job_sizes == [12]


def test_a_job_holds_at_most_max_requests(server: FakeModelServer) -> None:
    llm = _collecting(server, max_requests=5)
    results = llm.complete_many([_request(f"w{i}") for i in range(12)])
    assert [r.text for r in results] == [f"echo: w{i}" for i in range(12)]  # type: ignore[union-attr]
    assert sorted(llm.job_sizes) == [2, 5, 5]


def test_a_job_past_its_deadline_is_answered_by_direct_calls(server: FakeModelServer) -> None:
    # GIVEN a Batch API that never finishes
    server.batch_polls_before_done = 10**9
    llm = _collecting(server, deadline_s=0.2)
    # WHEN three requests are batched
    results = llm.complete_many([_request(f"w{i}") for i in range(3)])
    # THEN after the deadline they were answered directly, each in its place
    assert [r.text for r in results] == ["echo: w0", "echo: w1", "echo: w2"]  # type: ignore[union-attr]
    assert len(server.calls("/v1/chat/completions")) == 3
    assert llm.fallbacks == 3


def test_live_path_stays_direct_in_batch_mode(server: FakeModelServer) -> None:
    settings = make_settings(
        llm_provider="openai", llm_mode="batch", openai_api_key="k", openai_base_url=server.url + "/v1"
    )
    live = build_llm(settings, gpu_url=lambda: None)
    assert isinstance(live, OpenAILLM)
    live.complete(_request("a window as it closes"))
    assert server.calls("/v1/batches") == []


def test_backfill_llm_batches_extraction_and_answers_interactive_purposes_directly(server: FakeModelServer) -> None:
    settings = make_settings(
        llm_provider="openai",
        llm_mode="batch",
        openai_api_key="k",
        openai_base_url=server.url + "/v1",
        batch_poll_interval_s=0.005,
        batch_linger_s=0.2,
    )
    backfill = build_backfill_llm(settings, build_llm(settings, gpu_url=lambda: None))
    assert isinstance(backfill, DispatchingLLM)
    results = backfill.complete_many(
        [_request("cap"), _request("act", purpose="reasoning_agent"), _request("ner", "ner")]
    )
    assert [r.text for r in results] == ["echo: cap", "echo: act", "echo: ner"]  # type: ignore[union-attr]
    assert [line["body"]["messages"][0]["content"] for line in server.batch_input("batch_1")] == ["cap", "ner"]
    assert [c.json["messages"][0]["content"] for c in server.calls("/v1/chat/completions")] == ["act"]


def test_backfill_llm_in_direct_mode_is_the_live_llm(server: FakeModelServer) -> None:
    settings = make_settings(llm_provider="openai", openai_api_key="k", openai_base_url=server.url + "/v1")
    live = build_llm(settings, gpu_url=lambda: None)
    assert build_backfill_llm(settings, live) is live
