"""Benchmarks as windows of text and questions with evidence: EgoLife (30-s windows) and the LoCoMo format.

A benchmark becomes `Benchmark`: pre-captioned windows (one session per day or per conversation
session, `window_index` its position there) and questions, each asked at a moment (`asked_at`: only
windows that end by then are visible) with the evidence windows that answer it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worldmm.ingest.text_windows import TextWindow

EGOLIFE_DAY1 = datetime(2025, 1, 6, tzinfo=UTC)
"""EgoLife numbers days (DAY1…DAY7); DAY1 is taken to be Monday 6 January 2025 — the one place it is fixed."""

LOCOMO_TURN_SECONDS = 30
"""LoCoMo turns carry no clock time: turn n of a session is taken to be said n × 30 s after it starts."""
LOCOMO_TURNS_PER_WINDOW = 3


@dataclass(frozen=True)
class EvalWindow:
    """One pre-captioned window of a benchmark."""

    window_id: str
    session_id: str
    window_index: int
    start_time: datetime
    end_time: datetime
    caption: str
    transcript: str


@dataclass(frozen=True)
class EvalQuestion:
    """A question, when it is asked, and the windows that hold its evidence."""

    question_id: str
    question: str
    category: str
    asked_at: datetime
    evidence: tuple[str, ...]
    choices: dict[str, str] = field(default_factory=dict)
    answer: str | None = None


@dataclass(frozen=True)
class Benchmark:
    """Windows in time order and the questions about them."""

    name: str
    windows: list[EvalWindow]
    questions: list[EvalQuestion]

    def text_windows(self) -> list[TextWindow]:
        """The windows as the text-window ingest path takes them."""
        from worldmm.ingest.text_windows import TextWindow

        return [
            TextWindow(
                session_id=w.session_id,
                window_index=w.window_index,
                start_time=w.start_time,
                end_time=w.end_time,
                caption=w.caption,
                transcript=w.transcript,
            )
            for w in self.windows
        ]


def egolife_day(day: str) -> datetime:
    """Midnight of EgoLife's `DAYn`."""
    match = re.fullmatch(r"DAY(\d+)", day)
    if not match:
        raise ValueError(f"not an EgoLife day: {day!r}")
    return EGOLIFE_DAY1 + timedelta(days=int(match.group(1)) - 1)


def _clock(day: str, hms: str) -> datetime:
    hours, minutes, seconds = (int(part) for part in hms.split(":"))
    return egolife_day(day) + timedelta(hours=hours, minutes=minutes, seconds=seconds)


def load_egolife(directory: Path, *, days: set[str] | None = None, until: datetime | None = None) -> Benchmark:
    """EgoLife A1_JAKE: the 30-s windows and the development questions, optionally only some days and
    only up to `until` (windows ending by then; questions asked by then with all their evidence kept)."""
    windows: list[EvalWindow] = []
    position: dict[str, int] = {}
    with (directory / "A1_JAKE_windows30s.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            raw = json.loads(line)
            if days is not None and raw["day"] not in days:
                continue
            if until is not None and egolife_day(raw["day"]) + timedelta(seconds=raw["end_s"]) > until:
                continue
            index = position.get(raw["day"], 0)
            position[raw["day"]] = index + 1
            start = egolife_day(raw["day"]) + timedelta(seconds=raw["start_s"])
            windows.append(
                EvalWindow(
                    window_id=raw["window_id"],
                    session_id=f"egolife-{raw['day'].lower()}",
                    window_index=index,
                    start_time=start,
                    end_time=egolife_day(raw["day"]) + timedelta(seconds=raw["end_s"]),
                    caption=raw["caption"],
                    transcript=raw["transcript"],
                )
            )
    known = {w.window_id for w in windows}
    questions: list[EvalQuestion] = []
    questions_file = directory / "EgoLifeQA_A1_JAKE_dev.jsonl"
    with questions_file.open(encoding="utf-8") as handle:
        for line in handle:
            raw = json.loads(line)
            evidence = tuple(t["window_id"] for t in raw["targets"] if t["window_id"] in known)
            asked_at = _clock(raw["query_day"], raw["query_time"])
            if len(evidence) < len(raw["targets"]) or (until is not None and asked_at > until):
                continue
            questions.append(
                EvalQuestion(
                    question_id=str(raw["id"]),
                    question=raw["question"],
                    category=raw["type"],
                    asked_at=asked_at,
                    evidence=evidence,
                    choices=dict(raw.get("choices") or {}),
                    answer=raw.get("answer"),
                )
            )
    windows.sort(key=lambda w: (w.end_time, w.window_id))
    return Benchmark(name="egolife", windows=windows, questions=questions)


def _locomo_date(value: str) -> datetime:
    """LoCoMo session times look like '1:56 pm on 8 May, 2023'."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_locomo(path: Path) -> Benchmark:
    """The LoCoMo format: conversations of dated sessions of turns (`dia_id`), QA with `evidence` ids.

    Turns are grouped into windows of three; a question is asked after its conversation's last session,
    and its evidence windows are those holding an evidence turn.
    """
    samples = json.loads(path.read_text(encoding="utf-8"))
    windows: list[EvalWindow] = []
    questions: list[EvalQuestion] = []
    for sample in samples:
        conversation = sample["conversation"]
        sample_id = str(sample.get("sample_id", len(questions)))
        window_of_turn: dict[str, str] = {}
        last_end = None
        numbers = sorted(
            int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key))
        )
        for number in numbers:
            turns = conversation[f"session_{number}"]
            started = _locomo_date(conversation[f"session_{number}_date_time"])
            session_id = f"locomo-{sample_id}-s{number}"
            for index in range(0, len(turns), LOCOMO_TURNS_PER_WINDOW):
                chunk = turns[index : index + LOCOMO_TURNS_PER_WINDOW]
                window_id = f"{session_id}-w{index // LOCOMO_TURNS_PER_WINDOW}"
                start = started + timedelta(seconds=index * LOCOMO_TURN_SECONDS)
                end = start + timedelta(seconds=len(chunk) * LOCOMO_TURN_SECONDS)
                lines = []
                for turn in chunk:
                    window_of_turn[turn["dia_id"]] = window_id
                    line = f"{turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        line += f" [shares a photo: {turn['blip_caption']}]"
                    lines.append(line)
                number_in_session = index // LOCOMO_TURNS_PER_WINDOW
                windows.append(EvalWindow(window_id, session_id, number_in_session, start, end, "", "\n".join(lines)))
                last_end = end if last_end is None else max(last_end, end)
        for number, qa in enumerate(sample.get("qa", [])):
            evidence = tuple(dict.fromkeys(window_of_turn[e] for e in qa.get("evidence", []) if e in window_of_turn))
            if not evidence or last_end is None:
                continue
            questions.append(
                EvalQuestion(
                    question_id=f"{sample_id}-{number}",
                    question=qa["question"],
                    category=str(qa.get("category", "")),
                    asked_at=last_end + timedelta(minutes=1),
                    evidence=evidence,
                    answer=str(qa["answer"]) if "answer" in qa else None,
                )
            )
    windows.sort(key=lambda w: (w.end_time, w.window_id))
    return Benchmark(name=path.stem, windows=windows, questions=questions)


SAMPLE_SESSION_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_sample_session.py"
SAMPLE_EVIDENCE: dict[str, tuple[str, ...]] = {
    "Where did I leave my blue notebook?": ("cafe-message", "office-notebook-missing", "office-call-cafe"),
    "Where are my keys?": ("office-arrive", "office-reminders"),
    "Who reminded me about the doctor's appointment?": ("kitchen-doctor",),
    "What do I drink every morning?": ("kitchen-latte-habit", "cafe-order", "cafe-pay", "office-one-coffee"),
    "What do I have tomorrow morning?": ("kitchen-doctor", "kitchen-calendar", "office-late-tomorrow"),
    "When is Marco's presentation?": ("office-marco-slides",),
}
"""The sample session's questions and the scenes (windows) that hold their answers."""


def load_sample_session(script: Path = SAMPLE_SESSION_SCRIPT) -> Benchmark:
    """The scripted sample morning as text: each scene's lines as its window's transcript (no captions:
    nothing here sees the frames), and the sample questions asked when the session ends."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("worldmm_sample_session_script", script)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    morning = module.recordings()["sample-session"]
    start, window_seconds = morning.start, module.WINDOW_SECONDS
    windows = [
        EvalWindow(
            window_id=scene.key,
            session_id="sample-morning",
            window_index=index,
            start_time=start + timedelta(seconds=index * window_seconds),
            end_time=start + timedelta(seconds=(index + 1) * window_seconds),
            caption="",
            transcript="\n".join(f"{speaker}: {line}" for speaker, line in scene.lines),
        )
        for index, scene in enumerate(morning.scenes)
    ]
    asked_at = windows[-1].end_time + timedelta(minutes=1)
    questions = [
        EvalQuestion(
            question_id=f"sample-{number}",
            question=question,
            category=kind,
            asked_at=asked_at,
            evidence=SAMPLE_EVIDENCE[question],
            answer=answer,
        )
        for number, (kind, question, answer) in enumerate(morning.questions)
        if question in SAMPLE_EVIDENCE
    ]
    return Benchmark(name="sample-session", windows=windows, questions=questions)
