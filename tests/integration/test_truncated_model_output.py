"""At the LLM layer, an answer cut off by the token limit is asked again with more room,
then raises TruncatedOutputError; it is never returned as content (OpenAI body, llama.cpp, batch lines,
the scripted double), and the agent never shows one."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from worldmm.errors import TruncatedOutputError
from worldmm.llm.client import chat_completion_body, response_from_body
from worldmm.llm.port import LLMRequest, LLMResponse
from worldmm.llm.scripted import ScriptedLLM, Truncated
from worldmm.llm.structured import complete_with_room

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("postgres_lexemes")]

CUT = '{"caption": "The images (if any) are frames from one. 30-second window of wha'


def _request(max_tokens: int = 100) -> LLMRequest:
    return LLMRequest(purpose="caption", messages=[{"role": "user", "content": "x"}], model="m", max_tokens=max_tokens)


def test_openai_body_with_finish_reason_length_is_marked_truncated() -> None:
    body = {
        "model": "gpt",
        "choices": [{"finish_reason": "length", "message": {"content": CUT}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 100},
    }
    response = response_from_body(body, latency_ms=1.0)
    assert response.truncated and response.text == CUT


def test_truncated_answer_is_asked_again_with_twice_the_room() -> None:
    # GIVEN a model whose first answer is cut off and whose second is whole
    llm = ScriptedLLM().queue("caption", [Truncated(CUT), {"caption": "I pour tea."}])
    # WHEN asked
    response = llm.complete(_request(100))
    # THEN the whole answer comes back, asked for with twice the output tokens, both calls counted
    assert response.text == '{"caption": "I pour tea."}' and not response.truncated
    assert [c.max_tokens for c in llm.calls] == [100, 200]
    assert response.completion_tokens > len('{"caption": "I pour tea."}') // 4


def test_answer_truncated_twice_raises_and_is_never_returned() -> None:
    llm = ScriptedLLM().script("caption", Truncated(CUT))
    with pytest.raises(TruncatedOutputError):
        llm.complete(_request(100))
    assert len(llm.calls) == 2


def test_a_request_that_does_not_grow_gets_its_cut_off_answer_back_once() -> None:
    # GIVEN a request for a short answer that must not be asked again with more room
    llm = ScriptedLLM().script("caption", Truncated(CUT))
    response = llm.complete(replace(_request(100), grow_when_cut_off=False))
    # THEN one call, and the reply comes back marked cut off for the caller to drop
    assert len(llm.calls) == 1 and response.truncated and response.text == CUT


def test_where_a_reply_stops_travels_in_the_openai_body() -> None:
    assert chat_completion_body(replace(_request(), stop=("\n",)))["stop"] == ["\n"]
    assert "stop" not in chat_completion_body(_request())
    # a reasoning model rejects it: the reply is cut where it is read instead
    assert "stop" not in chat_completion_body(replace(_request(), model="o4-mini", stop=("\n",)))


def test_room_is_capped_by_the_ceiling() -> None:
    calls: list[int] = []

    def cut(request: LLMRequest) -> LLMResponse:
        calls.append(request.max_tokens)
        return LLMResponse(text=CUT, model="m", finish_reason="length")

    with pytest.raises(TruncatedOutputError):
        complete_with_room(cut, _request(100), ceiling=150)
    assert calls == [100, 150]
    calls.clear()
    with pytest.raises(TruncatedOutputError):
        complete_with_room(cut, _request(150), ceiling=150)  # no more room to give: no second call
    assert calls == [150]


class _FakeLlama:
    """The two llama.cpp calls LlamaCppLLM makes, answering cut-off output below `needs` tokens."""

    def __init__(self, needs: int) -> None:
        self.needs = needs
        self.max_tokens: list[int] = []

    def tokenize(self, data: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return list(range(len(data) // 4 + 1))

    def create_chat_completion(self, messages: Any, **kwargs: Any) -> dict[str, Any]:
        self.max_tokens.append(kwargs["max_tokens"])
        whole = kwargs["max_tokens"] >= self.needs
        text = '{"caption": "I pour tea."}' if whole else CUT
        return {
            "choices": [{"message": {"content": text}, "finish_reason": "stop" if whole else "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": kwargs["max_tokens"]},
        }


def test_llama_cpp_truncated_answer_is_retried_then_raises(tmp_path: Path) -> None:
    from worldmm.llm.local import LlamaCppLLM

    # GIVEN llama.cpp cutting the grammar-constrained JSON short at 100 tokens but not at 200
    llm = LlamaCppLLM(tmp_path / "m.gguf", n_ctx=4096)
    fake = _FakeLlama(needs=200)
    llm._llama = fake  # type: ignore[assignment]
    assert llm.complete(_request(100)).text == '{"caption": "I pour tea."}'
    assert fake.max_tokens == [100, 200]
    # AND when even half the context is not enough, the fragment raises
    llm._llama = _FakeLlama(needs=10_000)  # type: ignore[assignment]
    with pytest.raises(TruncatedOutputError):
        llm.complete(_request(1500))


def test_batch_line_cut_off_is_an_error_not_an_answer() -> None:
    from worldmm.llm.batch import _line_result

    line = {
        "custom_id": "r-1",
        "response": {
            "status_code": 200,
            "body": {"model": "gpt", "choices": [{"finish_reason": "length", "message": {"content": CUT}}]},
        },
    }
    assert isinstance(_line_result(line, 1.0), TruncatedOutputError)


def test_agent_truncated_answer_is_composed_from_memories_never_shown() -> None:
    from tests.integration.test_retrieval_agent import _retrievers, _search, _services, answer_question  # type: ignore[attr-defined]

    # GIVEN an agent whose final answer is cut off twice
    llm = ScriptedLLM().queue("reasoning_agent", [_search("episodic", "keys"), {"action": "ANSWER"}])
    llm.script("response", Truncated('{"answer": "Your keys are on the'))
    result = answer_question(
        _services(llm), "user-1", "Where are my keys?", now=datetime(2026, 5, 2, tzinfo=UTC), retrievers=_retrievers()
    )
    # THEN the fragment is not the answer
    assert "Your keys are on the" not in result.answer
    assert result.trace.answer_note and "composed" in result.trace.answer_note


def test_agent_truncated_action_counts_as_unparseable() -> None:
    from tests.integration.test_retrieval_agent import _retrievers, _services, answer_question  # type: ignore[attr-defined]

    llm = ScriptedLLM().script("reasoning_agent", Truncated('{"action": "SEA'))
    llm.script("response", {"answer": "On the hall table.", "cited": [1]})
    result = answer_question(
        _services(llm), "user-1", "Where are my keys?", now=datetime(2026, 5, 2, tzinfo=UTC), retrievers=_retrievers()
    )
    assert result.trace.rounds[0].action == "INVALID" and result.trace.rounds[0].parse_failures == 2
    assert result.trace.forced_answer and [r.action for r in result.trace.rounds[1:]] == ["SEARCH", "SEARCH"]
