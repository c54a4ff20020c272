"""The local-profile demo: ingest the sample recording, then ask questions through the real chat handler."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from worldmm.config import Settings

if TYPE_CHECKING:
    from worldmm.db.local import LocalDatabase
    from worldmm.media.transcription.port import Transcriber
from worldmm.retrieval.reader import load_model
from worldmm.services import Services, set_services

SAMPLE_SESSION = Path(__file__).resolve().parent.parent / "examples" / "sample-session"
EVENING_SESSION = SAMPLE_SESSION.parent / "evening-session"
"""The evening of the sample's day, asked over a memory that holds its morning too."""
NEXT_MORNING_SESSION = SAMPLE_SESSION.parent / "next-morning-session"
"""The morning after, asked over a memory that holds the day before too."""
RECORDINGS = (SAMPLE_SESSION, EVENING_SESSION, NEXT_MORNING_SESSION)
"""The sample recordings in the order they were recorded."""
QUESTIONS_FILE = "questions.jsonl"
DEMO_USER = "demo-user"
NO_MEMORY = "I don't remember that."  # the composed refusal (worldmm.retrieval.compose.NO_MEMORY)


_PROVENANCE = re.compile(
    r"\b(?:on \w+day \d{1,2} \w+(?: \d{4})?|this (?:morning|afternoon|evening)|yesterday) at \d{1,2}:\d{2}"
    r"|\(?from (?:your|what you know)[^)]*\)",
    re.I,
)


@dataclass(frozen=True)
class SampleQuestion:
    """A question about a sample recording and the fact its answer must state (`questions.jsonl`).

    `facts`: each must appear in the answer (case-insensitive); `a|b` accepts either spelling.
    `refusal`: nothing in the recording answers it, so the answer must be "I don't remember that.".
    """

    id: str
    kind: str
    question: str
    answer: str
    facts: tuple[str, ...] = ()
    refusal: bool = False

    def is_right(self, answer: str) -> bool:
        """Whether `answer` states every fact, read without its provenance (the date and clock time it was
        said, which memory): "11 March" must not count as "eleven"."""
        if self.refusal:
            return answer.strip() == NO_MEMORY
        said = _PROVENANCE.sub(" ", answer).casefold()
        return bool(self.facts) and all(
            any(option.casefold() in said for option in fact.split("|")) for fact in self.facts
        )


def local_profile(home: Path, database: LocalDatabase, **overrides: Any) -> Settings:
    """The local profile's settings with its real local models, on `home` and its embedded PostgreSQL."""
    values: dict[str, Any] = {
        "worldmm_profile": "local",
        "worldmm_home": home,
        "database_url": database.app_url,
        "database_admin_url": database.admin_url,
        "llm_provider": "local",
        "embedding_provider": "local",
        "embedding_dim": 384,
        "transcriber": "local",
    }
    return Settings(**(values | overrides))


def load_questions(sample: Path = SAMPLE_SESSION, name: str = QUESTIONS_FILE) -> list[SampleQuestion]:
    """The questions committed next to a sample recording in file `name` (none when there is no such file).

    `questions.jsonl` holds the demo's questions; `questions-dev.jsonl` and `questions-heldout*.jsonl` hold
    questions phrased as users ask them, each held-out file written before the changes it measured.

    Raises ValueError for a question that neither names the facts its answer must state nor is marked
    `"refusal": true` (it could never be counted right), or that does both.
    """
    path = sample / name
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            question = SampleQuestion(
                id=row["id"],
                kind=row["kind"],
                question=row["question"],
                answer=row["answer"],
                facts=tuple(row.get("facts", ())),
                refusal=bool(row.get("refusal", False)),
            )
            if bool(question.facts) == question.refusal:
                raise ValueError(f'{name}: question {question.id!r} needs either facts or "refusal": true')
            out.append(question)
    return out


@dataclass(frozen=True)
class DemoAnswer:
    question: str
    answer: str
    chat_id: str | None
    trace: dict[str, Any]
    elapsed_s: float
    expected: SampleQuestion | None = None

    @property
    def right(self) -> bool | None:
        """Whether the answer states the expected fact (None: nothing was expected)."""
        return None if self.expected is None else self.expected.is_right(self.answer)


def ask(question: str, user_id: str, chat_id: str | None = None) -> DemoAnswer:
    """Ask through the real chat-verbose Lambda handler (in process), as API Gateway would call it."""
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from handlers.http.memories.chat.app import lambda_handler
    from worldmm.gateway.events import LocalLambdaContext, build_event

    body: dict[str, Any] = {"question": question}
    if chat_id:
        body["chat_id"] = chat_id
    event = build_event(
        "POST",
        "/memories/chat/verbose",
        {"content-type": "application/json"},
        json.dumps(body).encode(),
        {"sub": user_id},
    )
    started = time.perf_counter()
    response = lambda_handler(event, cast(LambdaContext, LocalLambdaContext("ChatVerboseFunction")))
    elapsed = time.perf_counter() - started
    payload = json.loads(response["body"])
    if response["statusCode"] != 200:
        raise RuntimeError(f"chat failed ({response['statusCode']}): {payload}")
    return DemoAnswer(question, payload["answer"], payload.get("chat_id"), payload.get("trace") or {}, elapsed)


def run_demo(
    settings: Settings,
    sample: Path = SAMPLE_SESSION,
    user_id: str = DEMO_USER,
    questions: Sequence[SampleQuestion | str] | None = None,
    transcriber: Transcriber | None = None,
) -> list[DemoAnswer]:
    """Migrate, ingest `sample` (resumable), and answer `questions` (default: the sample's questions.jsonl).
    `transcriber` replaces the settings' one (a measurement that hears the script itself).

    Prints as it goes: each answer, its citations and the time it took, whether it states the expected
    fact, and at the end how many were right.
    """
    from worldmm.db import migrate
    from worldmm.ingest.session import ingest_session

    services = Services(settings) if transcriber is None else Services(settings, transcriber=transcriber)
    set_services(services)
    started = time.perf_counter()
    migrate.upgrade(settings)
    print(f"database ready in {time.perf_counter() - started:.1f}s ({settings.worldmm_home})")
    started = time.perf_counter()
    report = ingest_session(sample, user_id, services=services, progress=True)
    print(f"ingested {sample.name} in {time.perf_counter() - started:.1f}s: {report}")
    asked = load_questions(sample) if questions is None else questions
    if asked:
        # The question path's embedding model loads once (a re-run has not loaded it for ingest): timed
        # apart, as a server's start-up, so each answer's time is the answer's.
        started = time.perf_counter()
        services.embedder.embed(["warm-up"])
        if settings.reader_enabled:
            load_model(services)
        print(f"question models loaded in {time.perf_counter() - started:.1f}s")
    answers = []
    for item in asked:
        expected = item if isinstance(item, SampleQuestion) else None
        answer = ask(expected.question if expected else str(item), user_id)
        answer = DemoAnswer(answer.question, answer.answer, answer.chat_id, answer.trace, answer.elapsed_s, expected)
        answers.append(answer)
        _print_answer(answer)
    graded = [a for a in answers if a.right is not None]
    if graded:
        slowest = max(a.elapsed_s for a in answers)
        right = sum(bool(a.right) for a in graded)
        print(f"\nanswered right: {right}/{len(graded)}; slowest answer {slowest:.1f}s")
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
    if trace.get("answer_note"):
        print(f"   {trace['answer_note']}")
    if trace.get("read_at"):
        print(f"   time words read at {trace['read_at']} (the newest memory's end: the recording is old)")
    citations = trace.get("citations", [])
    for citation in citations:
        source = f", caption {citation['caption_source']}" if citation.get("caption_source") else ""
        print(
            f"   cites {citation.get('memory_type')} {citation.get('segment_id') or citation.get('id')} "
            f"{citation.get('start_time')} to {citation.get('end_time')} ({citation.get('duration_seconds')} s{source})"
        )
    if not citations:
        print("   cites nothing (no memory was relevant)")
    tokens = trace.get("total_prompt_tokens", 0) + trace.get("total_completion_tokens", 0)
    verdict = ""
    if answer.expected is not None:
        verdict = f", {'RIGHT' if answer.right else 'WRONG'} (expected: {answer.expected.answer})"
    print(f"   took {answer.elapsed_s:.1f}s, tokens {tokens}{verdict}")
