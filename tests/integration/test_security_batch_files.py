"""A finished OpenAI Batch job leaves none of its files (transcripts, captions) behind.

Against the fake OpenAI server on loopback: after the results are read, the input, output and error files
are deleted; a provider refusing a delete costs no result.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.test_llm_contract import _openai_client, _request
from tests.support.adapters import FakeModelServer, fake_model_server
from worldmm.llm.batch import BatchLLM, BatchRequestError
from worldmm.llm.port import LLMResponse

pytestmark = pytest.mark.integration


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with fake_model_server() as fake:
        yield fake


def test_security_a_finished_batch_deletes_its_input_output_and_error_files(server: FakeModelServer) -> None:
    # GIVEN a batch whose second request lands in the error file
    server.batch_fail_ids = lambda cid, index: index == 1
    batch = BatchLLM(_openai_client(server), poll_interval_s=0.001)
    # WHEN it is completed
    results = batch.complete_many([_request("a"), _request("b"), _request("c")])
    # THEN the results are as before, and every file the job made is deleted at the provider
    assert isinstance(results[1], BatchRequestError) and isinstance(results[0], LLMResponse)
    job = server._batches["batch_1"]
    made = {job["input_file_id"], job["output_file_id"], job["error_file_id"]}
    assert None not in made and set(server.deleted_files) == made


def test_security_a_refused_delete_costs_no_result(server: FakeModelServer) -> None:
    server.fail_next("/v1/files/file-1", 500)
    batch = BatchLLM(_openai_client(server, max_retries=0), poll_interval_s=0.001)
    [result] = batch.complete_many([_request("a")])
    assert isinstance(result, LLMResponse) and result.text == "echo: a"
    assert "file-1" not in server.deleted_files and len(server.deleted_files) == 1
