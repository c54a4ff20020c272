"""The spec 001 agent loop with a real model, beside the fixed plan, on the sample morning (issue 33).

Ingests `examples/sample-session/` into a fresh local profile (as `make demo` does), starts
llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with the Qwen2.5-Coder-1.5B-Instruct GGUF
(`python scripts/install_gguf.py`), and asks every committed question twice through the chat-verbose
handler: with the fixed plan (AGENT_MODE=plan, composed without a model) and with the loop
(AGENT_MODE=loop over the server). Per question and in total: rounds, replies that did not validate,
repairs, invalid actions and answers after repair, answers right, seconds per answer.

    python -m bench.bench_agent [--only ID ...] [--n-ctx 4096] [--threads N]

Prints one JSON object and writes it to bench/results/agent-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _loop_counts(trace: dict[str, Any]) -> dict[str, Any]:
    """What the loop's trace says about structured output: replies that failed, repairs, what stayed invalid."""
    rounds = trace.get("rounds", [])
    action_failures = sum(int(r.get("parse_failures") or 0) for r in rounds)
    invalid_actions = sum(r.get("action") == "INVALID" for r in rounds)
    answer_failures = int(trace.get("answer_parse_failures") or 0)
    composed = "composed" in (trace.get("answer_note") or "")
    return {
        "rounds": len(rounds),
        "agent_rounds": sum(r.get("note") != "fixed plan" for r in rounds),
        "actions": [
            f"{r.get('action')} {r.get('memory_type') or ''} {r.get('query') or ''}".strip()
            + (f" -> {len(r.get('retrieved_ids') or [])} memories" if r.get("action") == "SEARCH" else "")
            for r in rounds
        ],
        "citations": len(trace.get("citations") or []),
        "parse_failures": action_failures + answer_failures,
        "repairs": sum(bool(r.get("parse_failures")) and r.get("action") != "INVALID" for r in rounds)
        + int(bool(answer_failures) and not composed),
        "invalid_actions_after_repair": invalid_actions,
        "answers_composed_after_repair": int(composed),
        "forced_answer": bool(trace.get("forced_answer")),
        "tokens": int(trace.get("total_prompt_tokens", 0)) + int(trace.get("total_completion_tokens", 0)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="question ids (default: every committed question)")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    from tests.support.llama_server import MODEL_ALIAS, agent_settings, install_script, llama_server, sample_profile
    from worldmm.config import AgentMode
    from worldmm.demo import SAMPLE_SESSION, ask, load_questions
    from worldmm.llm.client import OpenAILLM
    from worldmm.services import Services, set_services

    script = install_script()
    if not script.is_installed():
        raise SystemExit(f"{script.gguf_path()} missing: run `python scripts/install_gguf.py` first")
    questions = [q for q in load_questions(SAMPLE_SESSION) if not args.only or q.id in args.only]
    rows: list[dict[str, Any]] = []
    with sample_profile() as memory, llama_server(script.gguf_path(), n_ctx=args.n_ctx, n_threads=args.threads) as url:
        plan = Services(
            memory.settings.model_copy(update={"agent_mode": AgentMode.PLAN}),
            db=memory.services.db,
            embedder=memory.services.embedder,
        )
        loop_settings = agent_settings(memory.settings, url)
        loop = Services(loop_settings, db=memory.services.db, embedder=memory.services.embedder)
        for question in questions:
            set_services(plan)
            planned = ask(question.question, "demo-user")
            set_services(loop)
            looped = ask(question.question, "demo-user")
            rows.append(
                {
                    "id": question.id,
                    "kind": question.kind,
                    "question": question.question,
                    "plan": {
                        "answer": planned.answer,
                        "right": question.is_right(planned.answer),
                        "seconds": round(planned.elapsed_s, 2),
                    },
                    "loop": {
                        "answer": looped.answer,
                        "right": question.is_right(looped.answer),
                        "seconds": round(looped.elapsed_s, 2),
                        **_loop_counts(looped.trace),
                    },
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        assert isinstance(loop.llm, OpenAILLM)
        structured_format = loop.llm.structured_format().value
        set_services(None)

    loops = [r["loop"] for r in rows]
    calls = sum(r["agent_rounds"] + 1 for r in loops)  # one action per agent round, one answer
    result = {
        "bench": "agent",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": MODEL_ALIAS,
        "server": "llama-cpp-python 0.3.36 (python -m llama_cpp.server)",
        "structured_format": structured_format,
        "settings": {
            k: getattr(loop_settings, k)
            for k in ("agent_max_tokens", "answer_max_tokens", "hybrid_top_k", "memory_text_max_chars",
                      "max_agent_rounds", "episodic_rerank")
        } | {"n_ctx": args.n_ctx},
        "questions": len(rows),
        "plan": {
            "right": sum(r["plan"]["right"] for r in rows),
            "seconds_median": round(statistics.median(r["plan"]["seconds"] for r in rows), 2),
        },
        "loop": {
            "right": sum(r["right"] for r in loops),
            "seconds_median": round(statistics.median(r["seconds"] for r in loops), 2),
            "seconds_max": round(max(r["seconds"] for r in loops), 2),
            "rounds_mean": round(statistics.mean(r["rounds"] for r in loops), 2),
            "rounds_max": max(r["rounds"] for r in loops),
            "structured_calls": calls,
            "parse_failures": sum(r["parse_failures"] for r in loops),
            "repairs": sum(r["repairs"] for r in loops),
            "failures_after_repair": sum(
                r["invalid_actions_after_repair"] + r["answers_composed_after_repair"] for r in loops
            ),
            "forced_answers": sum(r["forced_answer"] for r in loops),
        },
        "rows": rows,
    }
    result["loop"]["failure_rate_after_repair"] = round(result["loop"]["failures_after_repair"] / max(1, calls), 3)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"agent-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    path.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
