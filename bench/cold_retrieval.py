"""One retrieval in a fresh interpreter, as a Lambda cold start runs it (bench.bench_retrieval's cold child).

Imports only what the chat functions import for retrieval, builds the services, and answers one question
(episodic + semantic) with the graphs coming from their cached snapshots. The launcher starts the clock
before importing this module:

    python -c "import time, sys; t = time.perf_counter(); from bench.cold_retrieval import main; main(t)" SPEC
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from worldmm.config import Settings
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.hash_embedder import HashEmbedder
from worldmm.retrieval.episodic_retriever import retrieve_episodic
from worldmm.retrieval.semantic_retriever import retrieve_semantic
from worldmm.services import Services

LAUNCHER = "import time, sys; t = time.perf_counter(); from bench.cold_retrieval import main; main(t)"


def scripted(questions: dict[str, list[str]]) -> ScriptedLLM:
    """A zero-latency model that names each question's entities."""

    def ner(request: LLMRequest) -> dict[str, list[str]]:
        for question, entities in questions.items():
            if question in request.prompt_text:
                return {"entities": entities}
        return {"entities": []}

    return ScriptedLLM().script("ner", ner).script("cross_scale_rerank", {"selected": [1, 2, 3]})


def cold_query(spec: dict[str, Any], process_started: float) -> dict[str, float]:
    """Times from `process_started`: imports done, then one episodic and one semantic retrieval."""
    imported = time.perf_counter()
    settings = Settings(**spec["settings"])
    services = Services(settings, llm=scripted(spec["questions"]), embedder=HashEmbedder(settings.embedding_dim))
    user, question = spec["user"], spec["question"]
    started = time.perf_counter()
    episodic = retrieve_episodic(services, user, question)
    middle = time.perf_counter()
    semantic = retrieve_semantic(services, user, question)
    done = time.perf_counter()
    assert episodic.items and semantic.items, (episodic.reason, semantic.reason)
    return {
        "imports_ms": round((imported - process_started) * 1000, 1),
        "first_query_ms": round((done - started) * 1000, 1),
        "episodic_ms": round((middle - started) * 1000, 1),
        "semantic_ms": round((done - middle) * 1000, 1),
        "in_process_total_ms": round((done - process_started) * 1000, 1),
    }


def main(process_started: float) -> None:
    print(json.dumps(cold_query(json.loads(sys.argv[1]), process_started)))
