"""One retrieval in a fresh interpreter, as a Lambda cold start runs it (bench.bench_retrieval's cold child).

Imports the chat function's handler module (Powertools Logger, Metrics, event handler and Tracer, which
in Lambda patches the client libraries for X-Ray: the parent sets LAMBDA_TASK_ROOT as the runtime does),
then what retrieval imports, builds the services, and answers one question (episodic + semantic) with the
graphs coming from their cached snapshots. The launcher starts the clock before any import:

    python -c "<LAUNCHER>" SPEC
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from worldmm.config import Settings
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.retrieval.episodic_retriever import retrieve_episodic
from worldmm.retrieval.semantic_retriever import retrieve_semantic
from worldmm.services import Services

CHAT_HANDLER_MODULE = "handlers.http.memories.chat.app"
LAUNCHER = (
    "import time, importlib; t = time.perf_counter(); "
    f"importlib.import_module({CHAT_HANDLER_MODULE!r}); h = time.perf_counter(); "
    "from bench.cold_retrieval import main; main(t, h)"
)


def scripted(questions: dict[str, list[str]]) -> ScriptedLLM:
    """A zero-latency model that names each question's entities."""

    def ner(request: LLMRequest) -> dict[str, list[str]]:
        for question, entities in questions.items():
            if question in request.prompt_text:
                return {"entities": entities}
        return {"entities": []}

    return ScriptedLLM().script("ner", ner).script("cross_scale_rerank", {"selected": [1, 2, 3]})


def cold_query(spec: dict[str, Any], process_started: float, handler_imported: float) -> dict[str, float]:
    """Times from `process_started`: the handler imported, all imports done, then one episodic and one
    semantic retrieval."""
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
        "handler_import_ms": round((handler_imported - process_started) * 1000, 1),
        "imports_ms": round((imported - process_started) * 1000, 1),
        "first_query_ms": round((done - started) * 1000, 1),
        "episodic_ms": round((middle - started) * 1000, 1),
        "semantic_ms": round((done - middle) * 1000, 1),
        "in_process_total_ms": round((done - process_started) * 1000, 1),
    }


def main(process_started: float, handler_imported: float) -> None:
    print(json.dumps(cold_query(json.loads(sys.argv[1]), process_started, handler_imported)))
