"""Crash harness: SIGKILL each write path at many points, restart, recover as an operator would, and
check that nothing was lost, duplicated or left half-written (issue 32).

For every path a first run *traces* the named crash points it passes (worldmm.crashpoints: the ingest
flow's log steps, capture, summaries, consolidation, chat, forget-me, retrigger). Then, per kill point, a
fresh user and session are set up, the path runs in a child process that is killed with SIGKILL at one
named point (`name#hit`) or after a random delay, and a new child process (the restart) runs the
recovery: the client retries what was not acknowledged, and the operator runs `worldmm reap` (the
reaper with its default age) or re-runs the command that did not report success. The parent then checks
convergence against PostgreSQL and the object store.

Children are forked from this process after the imports (a fresh process, a fresh connection pool;
no import cost per run). Everything is real except the models (scripted LLM, hash embedder, a hashing
visual encoder, a fixed transcript): embedded PostgreSQL 18 + pgvector with RLS, files on disk.

    python -m bench.crash [--seed 7] [--random 20] [--max-named 60] [--paths capture_end,summaries,...]

Prints a summary and writes bench/results/crash.json (per path: kill points, how many killed the
child, how many converged, and every failure with its problems). Exit status 1 when any kill point did
not converge.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, select, text

from tests.support.events import FilePublisher
from tests.support.harness import embedded_postgres, make_settings
from tests.support.ingest import StaticTranscriber, StubVisualEncoder, put_window
from tests.support.memory import script_memory_models
from worldmm import crashpoints
from worldmm.capture.local import LocalCaptureStore
from worldmm.capture.models import CaptureSession
from worldmm.capture.service import CaptureService
from worldmm.config import Settings
from worldmm.db import engine as engine_module
from worldmm.db.engine import Database
from worldmm.db.models import Chat, ChatMessage, MemoryType, ProcessingStatus, Segment, Triple, VisualEmbedding
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.objects import DirectoryObjectStore
from worldmm.media.transcription.port import Transcript, TranscriptSegment
from worldmm.memory.embedding.hashing import HashEmbedder
from worldmm.services import Services

RESULTS = Path(__file__).resolve().parent / "results"
CREATED_AT = "2026-05-01T10:00:00+00:00"
TRANSCRIPT = "Alice: shall we make coffee?"


# --- the world: one database and one object store for every kill point ------------------------------


@dataclass
class World:
    settings: Settings
    root: Path
    db: Database
    admin_url: str
    summary_provider: str | None = None
    """SUMMARY_PROVIDER of every process (`--summary-provider`); None: the settings' default."""

    def services(self) -> Services:
        """The composition a process builds at start: real database and files, scripted models."""
        settings = self.settings
        if self.summary_provider is not None:
            settings = settings.model_copy(update={"summary_provider": self.summary_provider})
        llm = script_memory_models(ScriptedLLM())
        llm.script("reasoning_agent", {"action": "ANSWER"}).script("response", {"answer": "With Alice, at home."})
        llm.script("written_summary", {"summary": "You talked with Alice about coffee."})
        services = Services(
            settings,
            db=Database(self.db.url),
            llm=llm,
            embedder=HashEmbedder(settings.embedding_dim),
            store=DirectoryObjectStore(self.root),
            transcriber=StaticTranscriber(Transcript(TRANSCRIPT, [TranscriptSegment(0.0, 4.0, TRANSCRIPT)])),
            visual=StubVisualEncoder(settings.visual_embedding_dim),
            event_publisher=FilePublisher(self.events_file),
        )
        return services  # its invoker: the local profile's in-process functions, on these services

    @property
    def events_file(self) -> Path:
        """Where the app events are delivered (appended and fsynced: what a killed process cannot take back)."""
        return self.root.parent / "events.jsonl"

    def capture(self, services: Services) -> CaptureService:
        return CaptureService(services.capture_settings, LocalCaptureStore(services.store), None, services.invoker)


@contextmanager
def open_world() -> Iterator[World]:
    root = Path(tempfile.mkdtemp(prefix="worldmm-crash-"))
    settings0 = make_settings(worldmm_home=root / "home")
    with embedded_postgres(settings0) as pg:
        settings = make_settings(worldmm_home=root / "home", database_url=pg.app_url, database_admin_url=pg.admin_url)
        try:
            yield World(settings, root / "store", Database(pg.app_url), pg.admin_url)
        finally:
            shutil.rmtree(root, ignore_errors=True)


# --- child processes ----------------------------------------------------------------------------------


def _fresh_process(log: Path) -> None:
    """In a forked child: its own connection pools (never the parent's sockets), quiet logs."""
    engine_module._engine_for.cache_clear()
    engine_module._databases.clear()
    logging.disable(logging.CRITICAL)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)


def fork(work: Callable[[], None], log: Path, *, arm: tuple[str, int] | None = None, trace: Path | None = None) -> int:
    """Run `work` in a forked child; returns its pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        _fresh_process(log)
        if trace is not None:
            crashpoints.trace(str(trace))
        if arm is not None:
            crashpoints.arm(*arm)
        work()
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def wait(pid: int, *, kill_after: float | None = None, timeout: float = 120.0) -> str:
    """'ok', 'error' or 'killed' (SIGKILL, by a crash point or after `kill_after` seconds)."""
    deadline = time.monotonic() + (kill_after if kill_after is not None else timeout)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.002)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        return "killed"
    return "ok" if os.WEXITSTATUS(status) == 0 else "error"


# --- acknowledgements: what the caller was told before the crash ---------------------------------------


def ack(path: Path, what: str) -> None:
    with open(path, "a", encoding="utf-8") as out:
        out.write(what + "\n")
        out.flush()
        os.fsync(out.fileno())


def acked(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# --- checks shared by the paths --------------------------------------------------------------------------


def window_problems(world: World, user: str, session_id: str, windows: tuple[int, ...]) -> list[str]:
    """Every window complete exactly once (one row, one visual, one production's triples), no claim left,
    every summary of the session complete, no duplicated semantic triple, no entity left unused."""
    problems = []
    scale = world.settings.window_seconds
    with world.db.unit_of_work(user) as s:
        rows = s.execute(
            select(
                Segment.id,
                Segment.window_index,
                Segment.duration_seconds,
                Segment.processing_status,
                Segment.claim_token,
                Segment.claim_owner,
                Segment.caption,
            ).where(Segment.session_id == session_id)
        ).all()
        triples = Counter(
            s.execute(select(Triple.segment_id).where(Triple.memory_type == MemoryType.EPISODIC)).scalars()
        )
        visual = Counter(s.execute(select(VisualEmbedding.segment_id)).scalars())
        semantic = s.execute(
            select(Triple.subject_entity_id, Triple.predicate, Triple.object_literal, Triple.object_entity_id).where(
                Triple.memory_type == MemoryType.SEMANTIC, Triple.invalidated_at.is_(None)
            )
        ).all()
        # an entity no triple names: written by a run that died before its triples, never used since
        orphans = s.scalar(
            text(
                "SELECT count(*) FROM worldmm_entities e WHERE e.canonical_entity_id IS NULL AND NOT EXISTS"
                " (SELECT 1 FROM worldmm_triples t WHERE e.id IN (t.subject_entity_id, t.object_entity_id))"
            )
        )
    by_window = Counter(r.window_index for r in rows if r.duration_seconds == scale)
    if orphans:
        problems.append(f"{orphans} entities no triple names")
    for index in windows:
        if by_window[index] != 1:
            problems.append(f"window {index}: {by_window[index]} rows")
    for r in rows:
        name = f"{r.duration_seconds} s #{r.window_index}"
        if r.processing_status != ProcessingStatus.COMPLETE:
            problems.append(f"{name}: {r.processing_status.value}")
        if r.claim_token is not None or r.claim_owner is not None:
            problems.append(f"{name}: claim left")
        if r.caption is None:
            problems.append(f"{name}: no caption")
        if triples[r.id] != 1:  # the scripted models give every caption and summary exactly one triple
            problems.append(f"{name}: {triples[r.id]} episodic triples")
        if r.duration_seconds == scale and visual[r.id] != 1:
            problems.append(f"{name}: {visual[r.id]} visual embeddings")
    duplicates = [t for t, n in Counter(semantic).items() if n > 1]
    if duplicates:
        problems.append(f"{len(duplicates)} duplicated semantic triples")
    return problems


def upload(
    world: World, services: Services, user: str, session_id: str, windows: tuple[int, ...], frames: int = 4
) -> None:
    """The session's start and its windows' uploads (acknowledged PUTs: the objects are on disk)."""
    capture = world.capture(services)
    capture.store.create_session(CaptureSession(session_id=session_id, user_id=user, created_at=CREATED_AT))
    for index in windows:
        put_window(services.store, session_id, index, frames=frames, audio=b"RIFF-wav")


def notify_and_end(world: World, services: Services, session_id: str, windows: tuple[int, ...], acks: Path) -> None:
    """The bucket's notifications for the uploads, then the wearer's `end` (acknowledged when it returns)."""
    from worldmm.capture.s3_events import parse_key
    from worldmm.media.frames import window_prefix

    capture = world.capture(services)
    for index in windows:
        for key in services.store.list(window_prefix(session_id, index)):
            parsed = parse_key(key)
            if parsed is not None:
                capture.record_upload(parsed)
    session = capture.store.get_session(session_id)
    assert session is not None
    capture.end_session(session.user_id, session_id)
    ack(acks, "end")


def reap_default(world: World, services: Services) -> None:
    """`worldmm reap` with the configured age: what an operator runs after a restart."""
    from worldmm.ingest.reaper import reap

    reap(services)


# --- the write paths ----------------------------------------------------------------------------------


@dataclass
class Case:
    """One kill point's own user, session and acknowledgement file."""

    user: str
    session_id: str
    acks: Path
    extra: dict[str, Any] = field(default_factory=dict)


class WritePath:
    name = ""
    windows: tuple[int, ...] = ()

    def setup(self, world: World, case: Case) -> None: ...

    def run(self, world: World, case: Case) -> None: ...

    def recover(self, world: World, case: Case) -> None: ...

    def check(self, world: World, case: Case) -> list[str]:
        return []


class CaptureEnd(WritePath):
    """Uploads of three windows are in; their notifications and the session's end run in the child."""

    name = "capture_end"
    windows: tuple[int, ...] = (0, 1, 2)

    def setup(self, world: World, case: Case) -> None:
        upload(world, world.services(), case.user, case.session_id, self.windows)

    def run(self, world: World, case: Case) -> None:
        notify_and_end(world, world.services(), case.session_id, self.windows, case.acks)

    def recover(self, world: World, case: Case) -> None:
        services = world.services()
        if "end" not in acked(case.acks):  # the client retries its unanswered end
            capture = world.capture(services)
            capture.end_session(case.user, case.session_id)
        reap_default(world, services)

    def check(self, world: World, case: Case) -> list[str]:
        return window_problems(world, case.user, case.session_id, self.windows)


class Summaries(CaptureEnd):
    """Seven windows already ingested (one 3 min summary built live); the eighth window and the end run in
    the child: a partial 3 min summary, and the 10 min summary with its semantic consolidation."""

    name = "summaries"
    windows: tuple[int, ...] = tuple(range(8))

    def setup(self, world: World, case: Case) -> None:
        services = world.services()
        upload(world, services, case.user, case.session_id, self.windows)
        from worldmm.ingest.events import IngestWindowEvent
        from worldmm.ingest.window import ingest_window

        for index in self.windows[:-1]:
            ingest_window(
                services,
                IngestWindowEvent(sessionId=case.session_id, userId=case.user, windowIndex=index, frameCount=4),
            )

    def run(self, world: World, case: Case) -> None:
        notify_and_end(world, world.services(), case.session_id, self.windows[-1:], case.acks)

    def check(self, world: World, case: Case) -> list[str]:
        problems = window_problems(world, case.user, case.session_id, self.windows)
        with world.db.unit_of_work(case.user) as s:
            scales = Counter(s.execute(select(Segment.duration_seconds).where(Segment.duration_seconds > 30)).scalars())
        if scales != Counter({180: 2, 600: 1}):
            problems.append(f"summaries {dict(scales)}, expected two 3 min and one 10 min")
        return problems


class Retrigger(CaptureEnd):
    """Three complete windows; the operator's `worldmm retrigger --force` runs in the child."""

    name = "retrigger"

    def setup(self, world: World, case: Case) -> None:
        super().setup(world, case)
        notify_and_end(world, world.services(), case.session_id, self.windows, case.acks)
        case.acks.unlink()

    def run(self, world: World, case: Case) -> None:
        self._retrigger(world, world.services(), case)
        ack(case.acks, "retrigger")

    @staticmethod
    def _retrigger(world: World, services: Services, case: Case) -> None:
        from worldmm.ingest.events import RetriggerEvent
        from worldmm.ingest.retrigger import retrigger

        retrigger(services, RetriggerEvent(sessionId=case.session_id, userId=case.user, force=True))

    def recover(self, world: World, case: Case) -> None:
        services = world.services()
        if "retrigger" not in acked(case.acks):  # the command printed nothing: the operator runs it again
            self._retrigger(world, services, case)
        reap_default(world, services)


class DlqConsumer(CaptureEnd):
    """Three uploaded windows whose first ingest was lost: their events wait in the DLQ, consumed in the
    child; a message is deleted (acknowledged) only when the consumer returned."""

    name = "dlq_consumer"

    def run(self, world: World, case: Case) -> None:
        self._consume(world.services(), case)

    def _consume(self, services: Services, case: Case) -> None:
        from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

        from worldmm.ingest.dlq import handle_dlq_record

        done = set(acked(case.acks))
        for index in self.windows:
            message_id = f"m-{index}"
            if message_id in done:
                continue
            body = {
                "requestPayload": {
                    "sessionId": case.session_id,
                    "userId": case.user,
                    "windowIndex": index,
                    "frameCount": 4,
                }
            }
            record = SQSRecord(
                {
                    "messageId": message_id,
                    "receiptHandle": message_id,
                    "body": json.dumps(body),
                    "attributes": {"ApproximateReceiveCount": "1"},
                }
            )
            handle_dlq_record(services, record)
            ack(case.acks, message_id)

    def recover(self, world: World, case: Case) -> None:
        services = world.services()
        # The visibility timeout runs out: every message not deleted is delivered again.
        self._consume(services, case)
        reap_default(world, services)

    def check(self, world: World, case: Case) -> list[str]:
        problems = window_problems(world, case.user, case.session_id, self.windows)
        with world.db.unit_of_work(case.user) as s:
            summaries = s.scalar(select(func.count()).where(Segment.duration_seconds > 30))
        # the session never ended: no partial summary is due, and none may appear
        return problems + ([f"{summaries} summaries"] if summaries else [])


class ChatTurn(WritePath):
    """A question to a new chat, then one to the same chat, in the child; each acknowledged on return."""

    name = "chat_turn"

    def setup(self, world: World, case: Case) -> None:
        pass

    def run(self, world: World, case: Case) -> None:
        from worldmm.chat.service import handle_chat

        services = world.services()
        first = handle_chat(services, case.user, "Who was I with?")
        ack(case.acks, f"turn {first.chat_id}")
        handle_chat(services, case.user, "And where?", first.chat_id)
        ack(case.acks, f"turn {first.chat_id}")

    def check(self, world: World, case: Case) -> list[str]:
        problems = []
        with world.db.unit_of_work(case.user) as s:
            chats = s.execute(select(Chat.chat_id)).scalars().all()
            messages = s.execute(select(ChatMessage.chat_id, ChatMessage.role).order_by(ChatMessage.message_id)).all()
        turns = acked(case.acks)
        roles: dict[str, list[str]] = {c: [] for c in chats}
        for m in messages:
            roles.setdefault(m.chat_id, []).append(m.role)
        for chat_id, seq in roles.items():
            if not seq or seq != ["user", "assistant"] * (len(seq) // 2) or len(seq) % 2:
                problems.append(f"chat {chat_id[:8]}: messages {seq} (a half-written turn or an empty chat)")
        if len(chats) > 1:
            problems.append(f"{len(chats)} chats")
        saved = sum(len(seq) // 2 for seq in roles.values())
        if saved < len(turns):
            problems.append(f"{len(turns)} turns acknowledged, {saved} saved")
        if saved > 2:
            problems.append(f"{saved} turns saved for 2 questions")
        return problems


class ForgetMe(CaptureEnd):
    """A user with a session (objects, windows, summaries, triples) and a chat is erased in the child;
    another user's data must not change."""

    name = "forget_me"

    def setup(self, world: World, case: Case) -> None:
        super().setup(world, case)
        notify_and_end(world, world.services(), case.session_id, self.windows, case.acks)
        case.acks.unlink()
        services = world.services()
        services.chats.save_turn(case.user, None, "Where is my mug?", "On the counter.")
        case.extra["bystander"] = _footprint(world, BYSTANDER)

    def run(self, world: World, case: Case) -> None:
        from worldmm.forget_user import forget_user

        forget_user(world.services(), case.user, requested_by="crash-harness")
        ack(case.acks, "forgotten")

    def recover(self, world: World, case: Case) -> None:
        if "forgotten" not in acked(case.acks):  # the command reported nothing: the operator runs it again
            from worldmm.forget_user import forget_user

            forget_user(world.services(), case.user, requested_by="crash-harness")

    def check(self, world: World, case: Case) -> list[str]:
        from worldmm.forget_user import user_hash

        problems = [f"{table}: {n} rows left" for table, n in _footprint(world, case.user).items() if n]
        if (world.root / "sessions" / case.session_id).exists():
            problems.append("session objects left")
        if _footprint(world, BYSTANDER) != case.extra["bystander"]:
            problems.append("another user's data changed")
        engine = create_engine(world.admin_url)
        try:
            with engine.connect() as conn:
                complete = conn.execute(
                    text("SELECT count(*) FROM worldmm_forget_audit WHERE user_hash = :h AND complete"),
                    {"h": user_hash(case.user)},
                ).scalar()
        finally:
            engine.dispose()
        if not complete:
            problems.append("no completed audit record")
        return problems


BYSTANDER = "crash-bystander"


class ForgetSpan(CaptureEnd):
    """Three windows ingested and summarised; the span of the middle one is erased in the child (the client
    retries its unanswered DELETE, the operator runs the reaper): windows 0 and 2 and their re-made summary
    stay whole, nothing of window 1 is left, another user's data does not change."""

    name = "forget_span"

    def setup(self, world: World, case: Case) -> None:
        super().setup(world, case)
        notify_and_end(world, world.services(), case.session_id, self.windows, case.acks)
        case.acks.unlink()
        with world.db.unit_of_work(case.user) as s:
            start, end = s.execute(
                select(Segment.start_time, Segment.end_time).where(
                    Segment.session_id == case.session_id,
                    Segment.window_index == 1,
                    Segment.duration_seconds == world.settings.window_seconds,
                )
            ).one()
        case.extra["span"] = (start, end)
        case.extra["bystander"] = _footprint(world, BYSTANDER)

    def _forget(self, world: World, case: Case) -> None:
        from worldmm.timeline.forget_span import SpanTarget, forget_span

        forget_span(world.services(), case.user, SpanTarget(*case.extra["span"]), requested_by="crash-harness")

    def run(self, world: World, case: Case) -> None:
        self._forget(world, case)
        ack(case.acks, "forgotten")

    def recover(self, world: World, case: Case) -> None:
        from worldmm.ingest.reaper import reap

        if "forgotten" not in acked(case.acks):
            self._forget(world, case)
        reap(world.services(), older_than_s=0)  # the reaper's run once the emptied summary has aged

    def check(self, world: World, case: Case) -> list[str]:
        problems = window_problems(world, case.user, case.session_id, (0, 2))
        with world.db.unit_of_work(case.user) as s:
            left = s.scalar(
                select(func.count()).where(
                    Segment.session_id == case.session_id,
                    Segment.window_index == 1,
                    Segment.duration_seconds == world.settings.window_seconds,
                )
            )
            complete = s.scalar(text("SELECT count(*) FROM worldmm_forgotten_spans WHERE complete"))
        if left:
            problems.append("window 1 is still remembered")
        if any((world.root / "sessions" / case.session_id / "window_1").glob("*")):
            problems.append("window 1's objects left")
        if not complete:
            problems.append("no completed tombstone")
        if _footprint(world, BYSTANDER) != case.extra["bystander"]:
            problems.append("another user's data changed")
        return problems


def _footprint(world: World, user: str) -> dict[str, int]:
    """Rows holding `user`'s id, per table (as the owner: every table, no RLS)."""
    from worldmm.db.models import MEMORY_TABLES

    engine = create_engine(world.admin_url)
    try:
        with engine.connect() as conn:
            return {
                table: int(
                    conn.execute(text(f"SELECT count(*) FROM {table} WHERE user_id = :u"), {"u": user}).scalar() or 0
                )
                for table in MEMORY_TABLES
                if conn.execute(
                    text("SELECT 1 FROM information_schema.columns WHERE table_name = :t AND column_name = 'user_id'"),
                    {"t": table},
                ).first()
            }
    finally:
        engine.dispose()


class AppEvents(CaptureEnd):
    """`capture_end` watched from the app's side (issue 65): killed anywhere, also between a window's commit
    and the publish of its events (`events.before_publish`) or between the publish and its mark
    (`events.published`), and recovered (the client's end, `worldmm reap`), every window's `WindowProcessed`
    and the session's one `SessionProcessed` are delivered; a duplicate keeps its id."""

    name = "app_events"
    KILL_POINTS = (("ingest.completed", 1), ("events.before_publish", 1), ("events.published", 2))

    def check(self, world: World, case: Case) -> list[str]:
        problems = window_problems(world, case.user, case.session_id, self.windows)
        delivered = [e for e in FilePublisher(world.events_file).delivered() if e["sessionId"] == case.session_id]
        by_id: dict[str, dict[str, Any]] = {}
        for event in delivered:
            if by_id.setdefault(event["eventId"], event) != event:
                problems.append(f"event {event['eventId'][:8]} delivered twice with different contents")
        kinds = Counter(e["type"] for e in by_id.values())
        windows = sorted(e["windowIndex"] for e in by_id.values() if e["type"] == "WindowProcessed")
        if windows != list(self.windows):
            problems.append(f"WindowProcessed delivered for windows {windows}")
        if kinds["SessionProcessed"] != 1:
            problems.append(f"{kinds['SessionProcessed']} SessionProcessed delivered")
        if any(e["userId"] != case.user for e in by_id.values()):
            problems.append("an event names another user")
        with world.db.unit_of_work(case.user) as s:
            waiting = s.scalar(text("SELECT count(*) FROM worldmm_event_outbox WHERE published_at IS NULL"))
        if waiting:
            problems.append(f"{waiting} events left unpublished")
        return problems


class SampleSizedCaptureEnd(CaptureEnd):
    """`capture_end` with the sample session's size (24 windows of 16 frames): how long recovery takes
    after a restart (`--paths capture_end_24`; not in the default run)."""

    name = "capture_end_24"
    windows: tuple[int, ...] = tuple(range(24))

    def setup(self, world: World, case: Case) -> None:
        upload(world, world.services(), case.user, case.session_id, self.windows, frames=16)


class Migration0017(WritePath):
    """Migrations 0017 (halfvec vectors, no vector on episodic triples) to head (0021: the triples' hashed key)
    converting a database written at 0016, in batches of 2 rows: killed, then `worldmm migrate` run again.
    Each case has a database of its own on the server; every vector must come through (to half precision),
    episodic ones dropped, nothing left staged, every index valid, the triples keyed by `uq_triple_fact`."""

    name = "migration"
    ROWS = 5  # segments, entities, semantic and episodic triples, visual embeddings: 5 of each
    BATCH_ROWS = "2"

    def _url(self, world: World, case: Case) -> str:
        from sqlalchemy.engine import make_url

        name = case.session_id.replace("-", "_")
        return make_url(world.admin_url).set(database=name).render_as_string(hide_password=False)

    def setup(self, world: World, case: Case) -> None:
        import numpy as np

        from worldmm.db import migrate
        from worldmm.db.queries import vector_literal

        name = case.session_id.replace("-", "_")
        server = create_engine(world.admin_url, isolation_level="AUTOCOMMIT")
        with server.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            conn.execute(text(f"CREATE DATABASE {name}"))
        server.dispose()
        url = self._url(world, case)
        migrate.upgrade(world.settings, "0016", admin_url=url)
        rng = np.random.default_rng(len(case.session_id))
        dim, vdim = world.settings.embedding_dim, world.settings.visual_embedding_dim
        vectors: dict[str, list[float]] = {}

        def vec(key: str, n: int) -> str:
            v = rng.normal(size=n)
            vectors[key] = (v / np.linalg.norm(v)).tolist()
            return vector_literal(vectors[key])

        engine = create_engine(url)
        with engine.begin() as conn:
            for i in range(self.ROWS):
                seg, ent = f"00000000-0000-0000-0000-{i:012d}", f"10000000-0000-0000-0000-{i:012d}"
                conn.execute(
                    text(
                        "INSERT INTO worldmm_segments (id, user_id, session_id, window_index, duration_seconds,"
                        " start_time, end_time, caption, caption_embedding, processing_status) VALUES (:id, :u, :s,"
                        " :i, 30, now(), now(), 'a caption', CAST(:v AS vector), 'complete')"
                    ),
                    {"id": seg, "u": case.user, "s": case.session_id, "i": i, "v": vec(f"segment {seg}", dim)},
                )
                conn.execute(
                    text(
                        "INSERT INTO worldmm_entities (id, user_id, surface_form, canonical_name, embedding)"
                        " VALUES (:id, :u, :n, :n, CAST(:v AS vector))"
                    ),
                    {"id": ent, "u": case.user, "n": f"entity {i}", "v": vec(f"entity {ent}", dim)},
                )
                for kind in ("semantic", "episodic"):
                    triple = f"2000000{kind == 'episodic':d}-0000-0000-0000-{i:012d}"
                    conn.execute(
                        text(
                            "INSERT INTO worldmm_triples (id, segment_id, user_id, memory_type, subject_entity_id,"
                            " predicate, object_literal, embedding) VALUES (:id, :seg, :u, :kind, :ent, 'likes',"
                            " 'tea', CAST(:v AS vector))"
                        ),
                        {
                            "id": triple,
                            "seg": seg,
                            "u": case.user,
                            "kind": kind,
                            "ent": ent,
                            "v": vec(f"{kind} {triple}", dim),
                        },
                    )
                visual = f"30000000-0000-0000-0000-{i:012d}"
                conn.execute(
                    text(
                        "INSERT INTO worldmm_visual_embeddings (id, segment_id, user_id, embedding, timestamp)"
                        " VALUES (:id, :seg, :u, CAST(:v AS vector), now())"
                    ),
                    {"id": visual, "seg": seg, "u": case.user, "v": vec(f"visual {visual}", vdim)},
                )
        engine.dispose()
        case.extra["vectors"] = vectors

    def _migrate(self, world: World, case: Case) -> None:
        from worldmm.db import migrate

        batched = world.settings.model_copy(update={"migration_batch_rows": int(self.BATCH_ROWS)})
        migrate.upgrade(batched, admin_url=self._url(world, case))

    def run(self, world: World, case: Case) -> None:
        self._migrate(world, case)
        ack(case.acks, "migrated")

    def recover(self, world: World, case: Case) -> None:
        self._migrate(world, case)  # the operator runs `worldmm migrate` again

    def check(self, world: World, case: Case) -> list[str]:
        from worldmm.db import migrate

        problems: list[str] = []
        engine = create_engine(self._url(world, case))
        try:
            with engine.connect() as conn:
                version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
                if version != migrate.head_revision():
                    problems.append(f"schema at {version}")
                types = dict(
                    conn.execute(
                        text(
                            "SELECT c.relname || '.' || a.attname, format_type(a.atttypid, a.atttypmod)"
                            " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE NOT a.attisdropped"
                            " AND c.relname LIKE 'worldmm_%' AND (a.attname LIKE '%embedding%')"
                        )
                    ).all()
                )
                for column, kind in types.items():
                    if not kind.startswith("halfvec(") or column.endswith("_half"):
                        problems.append(f"{column}: {kind}")
                invalid = conn.execute(text("SELECT count(*) FROM pg_index WHERE NOT indisvalid")).scalar()
                if invalid:
                    problems.append(f"{invalid} invalid indexes")
                hnsw = set(
                    conn.execute(
                        text("SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%halfvec_cosine_ops%'")
                    ).scalars()
                )
                if hnsw != {"ix_segments_caption_embedding", "ix_entities_embedding_hnsw"}:
                    problems.append(f"HNSW indexes {sorted(hnsw)}")
                triple_indexes = set(
                    conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'worldmm_triples'")).scalars()
                )
                replaced = {"uq_triple_in_segment", "ix_triples_segment"}
                if "uq_triple_fact" not in triple_indexes or triple_indexes & replaced:
                    problems.append(f"triple indexes {sorted(triple_indexes)}")
                stored: dict[str, str | None] = {}
                for key_sql in (
                    "SELECT 'segment ' || id, CAST(caption_embedding AS text) FROM worldmm_segments",
                    "SELECT 'entity ' || id, CAST(embedding AS text) FROM worldmm_entities",
                    "SELECT memory_type || ' ' || id, CAST(embedding AS text) FROM worldmm_triples",
                    "SELECT 'visual ' || id, CAST(embedding AS text) FROM worldmm_visual_embeddings",
                ):
                    stored.update(dict(conn.execute(text(key_sql)).all()))
        finally:
            engine.dispose()
        expected: dict[str, list[float]] = case.extra.get("vectors", {})
        if set(stored) != set(expected):
            problems.append(f"rows {len(stored)} != {len(expected)}")
        for key, original in expected.items():
            value = stored.get(key)
            if key.startswith("episodic"):
                if value is not None:
                    problems.append(f"{key}: vector kept")
            elif value is None:
                problems.append(f"{key}: vector lost")
            elif max(abs(a - float(b)) for a, b in zip(original, value.strip("[]").split(","), strict=True)) > 2e-3:
                problems.append(f"{key}: vector changed")
        return problems


PATHS: dict[str, WritePath] = {
    p.name: p
    for p in (
        CaptureEnd(),
        Summaries(),
        ChatTurn(),
        ForgetMe(),
        ForgetSpan(),
        Retrigger(),
        DlqConsumer(),
        AppEvents(),
        Migration0017(),
    )
}
EXTRA_PATHS: dict[str, WritePath] = {p.name: p for p in (SampleSizedCaptureEnd(),)}


# --- the driver --------------------------------------------------------------------------------------------


@dataclass
class KillResult:
    point: str
    outcome: str  # killed / ok (the path finished before the point) / error
    run_s: float
    recovery: str
    recovery_s: float
    problems: list[str]


def run_point(
    world: World,
    path: WritePath,
    n: int,
    point: str,
    *,
    arm: tuple[str, int] | None,
    delay: float | None,
    trace: Path | None = None,
    recovery_kill: float | None = None,
) -> KillResult:
    """Set up a fresh case, run the path in a child killed at `arm` or after `delay` s, recover in a new
    child (with `recovery_kill`: that recovery is itself killed after so many seconds and run again), and
    check."""
    case = Case(
        user=f"crash-{path.name}-{n}",
        session_id=f"crash-{path.name.replace('_', '-')}-{n}",
        acks=world.root.parent / "acks" / f"{path.name}-{n}",
    )
    case.acks.parent.mkdir(parents=True, exist_ok=True)
    log = world.root.parent / "logs" / f"{path.name}-{n}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    path.setup(world, case)
    started = time.monotonic()
    outcome = wait(fork(lambda: path.run(world, case), log, arm=arm, trace=trace), kill_after=delay)
    run_s = time.monotonic() - started
    started = time.monotonic()
    if recovery_kill is not None:
        first = wait(fork(lambda: path.recover(world, case), log), kill_after=recovery_kill)
        point += f", recovery {'killed' if first == 'killed' else 'done'} before {recovery_kill * 1000:.0f} ms"
    recovery = wait(fork(lambda: path.recover(world, case), log))
    recovery_s = time.monotonic() - started
    problems = path.check(world, case)
    if recovery != "ok":
        problems.append(f"recovery {recovery}: see {log}")
    return KillResult(point, outcome, round(run_s, 3), recovery, round(recovery_s, 3), problems)


def add_bystander(world: World) -> None:
    """Another user with a complete window: forget-me must leave it as it is."""
    services = world.services()
    upload(world, services, BYSTANDER, "crash-bystander-session", (0,))
    notify_and_end(world, services, "crash-bystander-session", (0,), world.root.parent / "bystander-acks")


def run_path(
    world: World, path: WritePath, rng: random.Random, *, randoms: int, max_named: int, min_points: int = 0
) -> dict[str, Any]:
    """Trace the path once, then kill it at (up to `max_named`) named points and at `randoms` random delays
    (more when needed to reach `min_points`); every run is recovered and checked."""
    trace = world.root.parent / f"trace-{path.name}"
    baseline = run_point(world, path, 0, "none (trace run)", arm=None, delay=None, trace=trace)
    duration = baseline.run_s  # random kills fall anywhere in the child's run
    reached = trace.read_text().splitlines() if trace.exists() else []
    hits: Counter[str] = Counter()
    named: list[tuple[str, int]] = []
    for name in reached:
        hits[name] += 1
        named.append((name, hits[name]))
    if len(named) > max_named:
        named = sorted(rng.sample(named, max_named), key=named.index)
    randoms = max(randoms, min_points - len(named))
    results = [baseline]
    n = 1
    for name, hit in named:
        results.append(run_point(world, path, n, f"{name}#{hit}", arm=(name, hit), delay=None))
        n += 1
    run_window = max(duration, 0.05)
    recovery_window = max((r.recovery_s for r in results[1:]), default=0.2)
    for i in range(randoms):
        delay = rng.uniform(0.0, run_window)
        # every other random point also kills the first recovery: recovery must survive a crash too
        again = rng.uniform(0.0, recovery_window) if i % 2 else None
        point = f"after {delay * 1000:.0f} ms"
        results.append(run_point(world, path, n, point, arm=None, delay=delay, recovery_kill=again))
        n += 1
    failures = [r for r in results if r.problems]
    return {
        "kill_points": len(results) - 1,
        "named_points": len(named),
        "random_points": randoms,
        "recoveries_killed": sum(", recovery killed" in r.point for r in results),
        "steps": dict(hits),
        "named_by_family": dict(Counter(name.split(".")[0] for name, _ in named)),
        "killed": sum(r.outcome == "killed" for r in results),
        "converged": sum(not r.problems for r in results[1:]),
        "baseline_converged": not baseline.problems,
        "trace_run_s": round(duration, 3),
        "recovery_s_max": max(r.recovery_s for r in results[1:]) if len(results) > 1 else None,
        "failures": [r.__dict__ for r in failures],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--random", type=int, default=20, help="random-delay kill points per path")
    parser.add_argument("--max-named", type=int, default=60, help="named kill points per path (sampled above)")
    parser.add_argument("--min-points", type=int, default=40, help="kill points per path at least (random fill)")
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--out", default=str(RESULTS / "crash.json"))
    parser.add_argument(
        "--summary-provider", default=None, help="SUMMARY_PROVIDER of every process (e.g. written: issue 62)"
    )
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    logging.disable(logging.CRITICAL)
    report: dict[str, Any] = {
        "seed": args.seed,
        "machine": f"{os.cpu_count()} CPUs",
        "paths": {},
        "not_covered": ["capture via the DynamoDB capture store (aws profile)", "the S3 upload-event consumer"],
    }
    started = time.monotonic()
    with open_world() as world:
        world.summary_provider = args.summary_provider
        report["summary_provider"] = args.summary_provider
        add_bystander(world)
        for name in args.paths.split(","):
            path = PATHS.get(name) or EXTRA_PATHS[name]
            t0 = time.monotonic()
            report["paths"][name] = summary = run_path(
                world, path, rng, randoms=args.random, max_named=args.max_named, min_points=args.min_points
            )
            summary["elapsed_s"] = round(time.monotonic() - t0, 1)
            print(
                f"{name:14s} kill points {summary['kill_points']:4d} (named {summary['named_points']}, "
                f"random {summary['random_points']}), killed {summary['killed']}, converged {summary['converged']}"
                f"{'' if summary['baseline_converged'] else ', BASELINE FAILED'}, "
                f"recovery at most {summary['recovery_s_max']} s, {summary['elapsed_s']} s in all",
                flush=True,
            )
            for failure in summary["failures"][:5]:
                print(f"    {failure['point']}: {failure['problems'][:4]}", flush=True)
    paths = report["paths"].values()
    report["kill_points"] = sum(p["kill_points"] for p in paths)
    report["converged"] = sum(p["converged"] for p in paths)
    report["failed"] = sum(len(p["failures"]) for p in paths)
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    print(
        f"kill points {report['kill_points']}, converged {report['converged']}, failed {report['failed']}; "
        f"{report['elapsed_s']} s; report: {out}"
    )
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
