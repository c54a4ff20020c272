"""Test doubles and builders for the ingest pipeline tests (and its benchmark)."""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from aws_lambda_powertools.utilities.typing import LambdaContext
from sqlalchemy import func, select

from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.models import Entity, Segment, Triple, VisualEmbedding
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.objects import DirectoryObjectStore, ObjectStore
from worldmm.media.transcription.port import Transcript, TranscriptSegment, Voice
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services

USER = "user-a"
SESSION = "sess-1"
CREATED_AT = "2026-05-01T10:00:00+00:00"

CAPTION = "I talk with Kate in the kitchen while she holds a red mug."
ENTITIES = ["I", "Kate", "kitchen"]
TRIPLES = [["I", "talk with", "Kate"], ["I", "stand in", "kitchen"], ["Kate", "holds", "a red mug"]]


class StubVisualEncoder:
    """A zero-latency VisualEncoder double: a deterministic unit vector per clip; can be told to fail."""

    model_id = "stub-vlm2vec"

    def __init__(self, dim: int, error: Exception | None = None) -> None:
        self.dim = dim
        self.error = error
        self.calls: list[int] = []

    def _unit(self, data: bytes) -> list[float]:
        digest = hashlib.sha256(data).digest()
        vec = [(digest[i % len(digest)] - 127.5) for i in range(self.dim)]
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def encode_video(self, frames: list[bytes]) -> list[float]:
        self.calls.append(len(frames))
        if self.error is not None:
            raise self.error
        return self._unit(b"".join(frames))

    def encode_text(self, text: str) -> list[float]:
        return self._unit(text.encode())


@dataclass
class StaticTranscriber:
    """A Transcriber double returning one fixed transcript; records the filenames it was given."""

    transcript: Transcript
    calls: list[str] = field(default_factory=list)

    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript:
        self.calls.append(filename)
        return self.transcript


def failing(message: str) -> Callable[[LLMRequest], Any]:
    """A scripted answer that raises RuntimeError(message), like a model endpoint failing."""

    def answer(request: LLMRequest) -> Any:
        raise RuntimeError(message)

    return answer


def transcriber_of(services: Services) -> StaticTranscriber:
    return cast(StaticTranscriber, services.transcriber)


def visual_of(services: Services) -> StubVisualEncoder:
    return cast(StubVisualEncoder, services.visual)


def segment_id_of(result: Any) -> str:
    """The segmentId of an ok IngestWindowSuccess."""
    return str(result.model_dump()["segmentId"])


def confirm_none(request: LLMRequest) -> dict[str, Any]:
    return {"decisions": []}


def script_window_models(
    llm: ScriptedLLM,
    *,
    caption: str = CAPTION,
    entities: list[str] | None = None,
    triples: list[Any] | None = None,
) -> ScriptedLLM:
    """Script the four ingest prompts with a coherent kitchen scene (entity confirmations: all 'no')."""
    llm.script("caption", {"caption": caption})
    llm.script("ner", {"entities": ENTITIES if entities is None else entities})
    llm.script("episodic_triples", {"triples": TRIPLES if triples is None else triples})
    llm.script("entity_confirm", confirm_none)
    return llm


def put_session(
    store: ObjectStore, session_id: str = SESSION, created_at: str | None = CREATED_AT, user_id: str = USER
) -> None:
    """The session's catalog entry (local profile: metadata.json), owned by `user_id`."""
    doc: dict[str, Any] = {"sessionId": session_id, "userId": user_id}
    if created_at is not None:
        doc["createdAt"] = created_at
    store.put(f"sessions/{session_id}/metadata.json", json.dumps(doc).encode())


def put_window(
    store: ObjectStore,
    session_id: str = SESSION,
    index: int = 0,
    *,
    frames: int = 20,
    audio: bytes | None = b"RIFF-wav",
) -> list[str]:
    """Write `frames` JPEG-ish frames (and a .wav chunk) for one window; returns the frame keys."""
    keys = []
    for i in range(frames):
        key = f"sessions/{session_id}/window_{index}/frame_{i:04d}.jpg"
        store.put(key, b"\xff\xd8" + f"{session_id}-{index}-{i}".encode())
        keys.append(key)
    if audio is not None:
        store.put(f"sessions/{session_id}/window_{index}/audio.wav", audio)
    return keys


def ingest_scripted_window(
    services: Services,
    llm: ScriptedLLM,
    user_id: str,
    session_id: str,
    *,
    caption: str,
    entities: list[str],
    triples: list[Any],
    frames: int = 2,
) -> None:
    """One window of `user_id`'s session ingested through the real window path, its models scripted."""
    from worldmm.ingest.events import IngestWindowEvent
    from worldmm.ingest.window import ingest_window

    script_window_models(llm, caption=caption, entities=entities, triples=triples)
    put_session(services.store, session_id, user_id=user_id)
    put_window(services.store, session_id, 0, frames=frames)
    event = IngestWindowEvent(sessionId=session_id, userId=user_id, windowIndex=0, frameCount=frames)
    assert ingest_window(services, event).status == "ok"


def make_ingest_services(
    settings: Settings,
    db: Database,
    llm: ScriptedLLM,
    root: Path,
    *,
    transcript: str = "Kate: want some tea?",
    visual: Any | None = None,
    invoker: Any | None = None,
) -> Services:
    """Services for ingest tests: real PostgreSQL, files under `root`, zero-latency models; USER's session
    SESSION is in the catalog (its metadata.json), as capture's start writes it."""
    store = DirectoryObjectStore(root)
    put_session(store)
    return Services(
        settings,
        db=db,
        llm=llm,
        embedder=HashEmbedder(settings.embedding_dim),
        store=store,
        transcriber=StaticTranscriber(Transcript(transcript, [TranscriptSegment(0.0, 5.0, transcript)])),
        visual=visual if visual is not None else StubVisualEncoder(settings.visual_embedding_dim),
        invoker=invoker if invoker is not None else InProcessInvoker(),
    )


class _LambdaContextStub:
    """The attributes Powertools' inject_lambda_context reads."""

    function_name = "test-function"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def lambda_context() -> LambdaContext:
    """A stand-in Lambda context for calling handlers directly."""
    return cast(LambdaContext, _LambdaContextStub())


def window_segment(
    db: Database, user_id: str = USER, session_id: str = SESSION, index: int = 0
) -> Segment | None:
    with db.unit_of_work(user_id) as session:
        return session.execute(
            select(Segment).where(
                Segment.session_id == session_id,
                Segment.window_index == index,
                Segment.duration_seconds == 30,
            )
        ).scalar_one_or_none()


def counts(db: Database, user_id: str = USER) -> dict[str, int]:
    with db.unit_of_work(user_id) as session:
        return {
            "segments": session.scalar(
                select(func.count()).select_from(Segment).where(Segment.duration_seconds == 30)
            )
            or 0,
            "entities": session.scalar(select(func.count()).select_from(Entity)) or 0,
            "triples": session.scalar(select(func.count()).select_from(Triple)) or 0,
            "visual": session.scalar(select(func.count()).select_from(VisualEmbedding)) or 0,
        }


def new_id() -> str:
    return str(uuid.uuid4())
