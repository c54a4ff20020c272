"""The local-profile demo: ingest the sample recording, then ask questions through the real chat handler."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from worldmm.config import Settings
from worldmm.services import Services, set_services

SAMPLE_SESSION = Path(__file__).resolve().parent.parent / "examples" / "sample-session"
DEMO_USER = "demo-user"
DEMO_QUESTIONS = (
    "Where did I leave my blue notebook?",  # episodic
    "What do I drink every morning?",  # semantic (a habit)
    "What did I do at the Corner Cafe on Tuesday morning?",  # needs a time reference
)


@dataclass(frozen=True)
class DemoAnswer:
    question: str
    answer: str
    chat_id: str | None
    trace: dict[str, Any]
    elapsed_s: float


def ask(question: str, user_id: str, chat_id: str | None = None) -> DemoAnswer:
    """Ask through the real chat-verbose Lambda handler (in process), as API Gateway would call it."""
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from api.memories.chat_verbose.app import lambda_handler
    from worldmm.gateway.events import LocalLambdaContext, build_event

    body: dict[str, Any] = {"question": question}
    if chat_id:
        body["chat_id"] = chat_id
    event = build_event(
        "POST", "/memories/chat/verbose", {"content-type": "application/json"}, json.dumps(body).encode(),
        {"sub": user_id},
    )
    started = time.perf_counter()
    response = lambda_handler(event, cast(LambdaContext, LocalLambdaContext("ChatVerboseFunction")))
    elapsed = time.perf_counter() - started
    payload = json.loads(response["body"])
    if response["statusCode"] != 200:
        raise RuntimeError(f"chat failed ({response['statusCode']}): {payload}")
    return DemoAnswer(question, payload["answer"], payload.get("chat_id"), payload.get("trace") or {}, elapsed)


def run_demo(settings: Settings, sample: Path = SAMPLE_SESSION, user_id: str = DEMO_USER,
             questions: tuple[str, ...] = DEMO_QUESTIONS) -> list[DemoAnswer]:
    """Migrate, ingest `sample` (resumable), and answer `questions`; prints as it goes."""
    from worldmm.db import migrate
    from worldmm.pipeline.ingest_session import ingest_session

    services = Services(settings)
    set_services(services)
    started = time.perf_counter()
    migrate.upgrade(settings)
    print(f"database ready in {time.perf_counter() - started:.1f}s ({settings.worldmm_home})")
    started = time.perf_counter()
    report = ingest_session(sample, user_id, services=services, progress=True)
    print(f"ingested {sample.name} in {time.perf_counter() - started:.1f}s: {report}")
    answers = []
    for question in questions:
        answer = ask(question, user_id)
        answers.append(answer)
        _print_answer(answer)
    return answers


def _print_answer(answer: DemoAnswer) -> None:
    trace = answer.trace
    print("\n" + "=" * 78)
    print(f"Q: {answer.question}")
    print(f"A: {answer.answer}")
    for step in trace.get("rounds", []):
        ids = ", ".join(str(i) for i in step.get("retrieved_ids", [])[:5])
        print(
            f"   round {step.get('round')}: {step.get('action')} {step.get('memory_type') or ''} "
            f"{json.dumps(step.get('query') or '')} -> [{ids}] ({step.get('elapsed_ms', 0):.0f} ms)"
            + (f" note: {step['note']}" if step.get("note") else "")
        )
    for citation in trace.get("citations", []):
        print(
            f"   cites {citation.get('memory_type')} {citation.get('segment_id') or citation.get('id')} "
            f"{citation.get('start_time')} to {citation.get('end_time')} ({citation.get('duration_seconds')} s)"
        )
    tokens = trace.get("total_prompt_tokens", 0) + trace.get("total_completion_tokens", 0)
    print(f"   elapsed {answer.elapsed_s:.1f}s, tokens {tokens}")
