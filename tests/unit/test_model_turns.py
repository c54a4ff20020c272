"""The local model's turns: a call waits for the model only until its request's start-by moment."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from worldmm.llm.local import LlamaCppLLM
from worldmm.llm.port import LLMRequest, ModelBusyError


def _request(start_by: float | None) -> LLMRequest:
    return LLMRequest(purpose="judge_sentence", messages=[], model="m", max_tokens=1, start_by=start_by)


def test_a_call_whose_start_by_passes_while_another_question_holds_the_model_is_not_made() -> None:
    # GIVEN a model busy with another question's call
    llm = LlamaCppLLM(Path("unused.gguf"))
    llm._generate_lock.acquire()
    # WHEN a call that must start within 50 ms asks for its turn
    started = time.perf_counter()
    with pytest.raises(ModelBusyError), llm._turn(_request(started + 0.05)):
        pass
    # THEN it gave up at its start-by moment, not after the other call
    assert 0.04 <= time.perf_counter() - started < 1.0


def test_a_call_gets_its_turn_when_the_model_is_free_in_time() -> None:
    llm = LlamaCppLLM(Path("unused.gguf"))
    with llm._turn(_request(time.perf_counter() + 0.05)):
        assert llm._generate_lock.locked()
    assert not llm._generate_lock.locked()
