"""`worldmm eval`: build a benchmark's memory through the project's write path, ask every question, score.

Every question is asked "as of" its time: the retrievers and the baselines see only windows that end
by then. Evidence recall@k counts a question as found when one of its evidence windows is in the top
k (exact), or a window within ±30 s of one (lenient). Retrieval latency is measured per method.

Besides the retrievers, the question path itself is scored: "answer cites" is the recall of the 30 s
windows the final answer cites (`answer_question`, the plan or agent loop the settings choose). With
`answers=True` a model also answers each multiple-choice question from the hybrid retrieval
(`multiple_choice.txt`), scored against the key (EgoLife's measure): the local reader beside the small
local LLM (`Services.reader_llm`), else the configured model. A choice counts only when it is a letter
of the question's and cites a retrieved memory; anything else is an abstention, counted wrong and
reported apart. "choice cites" is the recall of the windows the choices cite. `sample` asks only a
fixed random sample of the questions (seed `SAMPLE_SEED`) where the whole set is too slow.
"""

from __future__ import annotations

import json
import platform
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel

from worldmm.db.queries.eval import windows_of_duration
from worldmm.errors import ModelOutputError
from worldmm.eval.baselines import PlainBM25, rrf, top
from worldmm.eval.datasets import Benchmark, EvalQuestion, EvalWindow
from worldmm.memory.episodic.segment_text import segment_memory_text

if TYPE_CHECKING:
    from worldmm.memory.embedding.port import TextEmbedder
    from worldmm.services import Services

KS = (1, 3, 5, 10, 20)
LENIENT_SECONDS = 30
WINDOW_SECONDS = 30
BASELINES = ("bm25", "dense", "bm25+dense rrf")
RETRIEVERS = ("hybrid", "episodic")
CITED = "answer cites"
CHOICE_CITED = "choice cites"
MULTIPLE_CHOICE_PURPOSE = "multiple_choice"
MULTIPLE_CHOICE_MEMORIES = 10
# The local reader's context is 2,048 tokens: fewer, shorter memories, and room for a short JSON answer only.
READER_CHOICE_MEMORIES = 6
READER_MEMORY_CHARS = 400
READER_CHOICE_TOKENS = 64
SAMPLE_SEED = 23


@dataclass(frozen=True)
class StoredWindows:
    """The benchmark's windows as stored: segment ids, embeddings, and their end times (for visibility)."""

    windows: list[EvalWindow]
    segment_ids: list[Any]
    embeddings: np.ndarray
    end_s: np.ndarray
    start_s: np.ndarray
    position_of_segment: dict[Any, int]
    position_of_window: dict[str, int]


def build_memory(services: Services, user_id: str, benchmark: Benchmark, *, progress: bool = True) -> dict[str, Any]:
    """Ingest the benchmark's windows through the text-window path (resumable); returns what it did."""
    from tqdm import tqdm

    from worldmm.ingest.text_windows import ingest_text_windows

    windows = benchmark.text_windows()
    started = time.perf_counter()
    with tqdm(total=len(windows), desc=f"memory of {benchmark.name}", unit="window", disable=not progress) as bar:
        report = ingest_text_windows(services, user_id, windows, progress=bar.update)
    return {"seconds": round(time.perf_counter() - started, 1), "report": _jsonable(report)}


def _jsonable(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return {k: _jsonable(getattr(value, k)) for k in value.__dataclass_fields__}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def load_stored_windows(services: Services, user_id: str, benchmark: Benchmark) -> StoredWindows:
    """Map the benchmark's windows to their stored segments (every window must have been stored)."""
    by_key = {(w.session_id, w.window_index): i for i, w in enumerate(benchmark.windows)}
    segment_ids: list[Any] = [None] * len(benchmark.windows)
    dim = services.settings.embedding_dim
    embeddings = np.zeros((len(benchmark.windows), dim), dtype=np.float32)
    with services.db.unit_of_work(user_id) as session:
        for row in windows_of_duration(session, user_id, WINDOW_SECONDS):
            position = by_key.get((row.session_id, row.window_index))
            if position is None:
                continue
            segment_ids[position] = row.id
            if row.embedding:
                embeddings[position] = np.array(row.embedding.strip("[]").split(","), dtype=np.float32)
    missing = [benchmark.windows[i].window_id for i, s in enumerate(segment_ids) if s is None]
    if missing:
        raise RuntimeError(f"{len(missing)} windows were not stored (first: {missing[0]}): run the build again")
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    return StoredWindows(
        windows=benchmark.windows,
        segment_ids=segment_ids,
        embeddings=embeddings / np.where(norms == 0, 1, norms),
        end_s=np.array([w.end_time.timestamp() for w in benchmark.windows]),
        start_s=np.array([w.start_time.timestamp() for w in benchmark.windows]),
        position_of_segment={s: i for i, s in enumerate(segment_ids)},
        position_of_window={w.window_id: i for i, w in enumerate(benchmark.windows)},
    )


def _hits(ranked: Sequence[int], question: EvalQuestion, stored: StoredWindows) -> dict[str, list[bool]]:
    """Per k: whether an evidence window is in the top k, exactly and within ±30 s."""
    targets = [stored.position_of_window[e] for e in question.evidence]
    target_sessions = {stored.windows[t].session_id for t in targets}
    target_starts = stored.start_s[targets]
    exact: list[bool] = []
    lenient: list[bool] = []
    for k in KS:
        head = list(ranked[:k])
        exact.append(any(p in targets for p in head))
        lenient.append(
            any(
                stored.windows[p].session_id in target_sessions
                and float(np.min(np.abs(target_starts - stored.start_s[p]))) <= LENIENT_SECONDS
                for p in head
            )
        )
    return {"exact": exact, "lenient": lenient}


def _retriever_rankings(
    services: Services, user_id: str, stored: StoredWindows, answered: dict[str, str]
) -> dict[str, Callable[..., list[int]]]:
    from worldmm.retrieval.agent import answer_question
    from worldmm.retrieval.episodic_retriever import retrieve_episodic
    from worldmm.retrieval.hybrid import hybrid_search

    depth = max(KS)

    def positions(items: Sequence[Any]) -> list[int]:
        return [
            stored.position_of_segment[sid]
            for item in items
            if (sid := _as_uuid(item.segment_id)) in stored.position_of_segment
        ]

    def hybrid(question: EvalQuestion) -> list[int]:
        result = hybrid_search(
            services, user_id, question.question, now=question.asked_at, limit=depth, durations=[WINDOW_SECONDS]
        )
        return positions(result.items)

    def episodic(question: EvalQuestion) -> list[int]:
        result = retrieve_episodic(
            services, user_id, question.question, now=question.asked_at, limit=depth, scales=(WINDOW_SECONDS,)
        )
        return positions(result.items)

    def cited(question: EvalQuestion) -> list[int]:
        answer = answer_question(services, user_id, question.question, now=question.asked_at)
        answered[question.question_id] = answer.answer
        return positions(answer.trace.citations)

    return {"hybrid": hybrid, "episodic": episodic, CITED: cited}


def _as_uuid(value: str | None) -> Any:
    import uuid

    return uuid.UUID(value) if value else None


class PrecomputedEmbedder:
    """The questions' embeddings computed once in a batch, so retrieval latency is retrieval alone."""

    def __init__(self, inner: TextEmbedder, texts: list[str]) -> None:
        self.inner = inner
        started = time.perf_counter()
        self.vectors = dict(zip(texts, inner.embed(texts), strict=True)) if texts else {}
        self.seconds_per_text = (time.perf_counter() - started) / max(1, len(texts))

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.inner.embed(missing), strict=True))
        return [self.vectors[t] for t in texts]


class ChoiceAnswer(BaseModel):
    """The multiple-choice prompt's answer."""

    choice: str
    cited: list[int] = []


@dataclass(frozen=True)
class Choice:
    """A model's multiple-choice answer: the letter (None: it abstained) and the windows it cites, first first."""

    letter: str | None
    cited: list[int]


def multiple_choice(services: Services, user_id: str, question: EvalQuestion, stored: StoredWindows) -> Choice:
    """A model's choice of `question.choices` from the hybrid retrieval of 30-s windows as of the question's
    time: the local reader beside the small local LLM, else the configured model. It abstains (letter None)
    unless it names one of the letters and cites a memory it was shown."""
    from worldmm.llm.structured import build_request, parse_model
    from worldmm.retrieval.hybrid import hybrid_search
    from worldmm.retrieval.sanitize import numbered_memories

    settings = services.settings
    reader = settings.reader_enabled
    limit, chars, tokens = (
        (READER_CHOICE_MEMORIES, READER_MEMORY_CHARS, READER_CHOICE_TOKENS)
        if reader
        else (MULTIPLE_CHOICE_MEMORIES, settings.memory_text_max_chars, settings.answer_max_tokens)
    )
    found = hybrid_search(
        services, user_id, question.question, now=question.asked_at, limit=limit, durations=[WINDOW_SECONDS]
    )
    request = build_request(
        MULTIPLE_CHOICE_PURPOSE,
        model=settings.agent_model,
        max_tokens=tokens,
        response_model=ChoiceAnswer,
        reasoning_effort=None,
        now=f"{question.asked_at:%A %d %B %Y, %H:%M}",
        question=question.question,
        choices="\n".join(f"{letter}. {text}" for letter, text in sorted(question.choices.items())),
        context=numbered_memories(found.items, chars),
    )
    llm = services.reader_llm if reader else services.llm
    try:
        answer = parse_model(llm.complete(request).text, ChoiceAnswer)
    except ModelOutputError:
        return Choice(None, [])
    shown = [_as_uuid(item.segment_id) for item in found.items]
    cited = [stored.position_of_segment[shown[n - 1]] for n in answer.cited if 1 <= n <= len(shown)]
    letter = answer.choice.strip().upper()
    if letter not in question.choices or not cited:
        return Choice(None, cited)
    return Choice(letter, cited)


def question_sample(questions: list[EvalQuestion], size: int | None) -> list[EvalQuestion]:
    """All the questions, or a fixed random sample of `size` of them (in their order)."""
    if size is None or size >= len(questions):
        return questions
    chosen = set(random.Random(SAMPLE_SEED).sample(range(len(questions)), size))
    return [q for n, q in enumerate(questions) if n in chosen]


def evaluate(
    services: Services,
    user_id: str,
    benchmark: Benchmark,
    *,
    progress: bool = True,
    answers: bool = False,
    sample: int | None = None,
) -> dict[str, Any]:
    """Ask every question of `benchmark` (or a fixed random `sample` of them) of the already-built memory of
    `user_id`; recall and latency (and, with `answers`, a model's multiple-choice accuracy)."""
    from tqdm import tqdm

    from worldmm.services import Services

    stored = load_stored_windows(services, user_id, benchmark)
    bm25 = PlainBM25([segment_memory_text(w.caption, w.transcript) for w in benchmark.windows])
    questions = question_sample([q for q in benchmark.questions if q.evidence], sample)
    embedder = PrecomputedEmbedder(services.embedder, [q.question for q in questions])
    querying = Services(services.settings, db=services.db, llm=services.llm, embedder=embedder)
    answered: dict[str, str] = {}  # the final answer's words, by question
    retrievers = _retriever_rankings(querying, user_id, stored, answered)
    line_index = _LineIndex.of(benchmark)
    # The choice is asked of a model of its own (the same weights, shared in the page cache): asked of the
    # one that judges the answer's sentences, its prompt displaced the judge's cached start, and the deadline
    # then kept most judgements out (the answer's p50 about a third of what it is with a model of its own).
    choosing = Services(services.settings, db=services.db, llm=services.llm, embedder=embedder)
    tally = _Tally()
    query_embeddings = embedder.embed([q.question for q in questions])
    for question, query_embedding in tqdm(
        list(zip(questions, query_embeddings, strict=True)), desc="questions", unit="q", disable=not progress
    ):
        visible = stored.end_s <= question.asked_at.timestamp()
        rankings = _baseline_rankings(bm25, stored, visible, query_embedding, question, tally.latency)
        for name, retrieve in retrievers.items():
            started = time.perf_counter()
            rankings[name] = retrieve(question)
            tally.latency[name].append((time.perf_counter() - started) * 1000)
        tally.score_rankings(rankings, question, stored)
        if question.answer and not question.choices:  # a free-text gold answer: how much of it each states
            said = {"answer": answered.get(question.question_id, "")} | line_index.best(question.question, visible)
            for name, words in said.items():
                tally.stated[name].append(answer_words(words, question.answer))
        if answers and question.choices and question.answer:
            tally.score_choice(choosing, user_id, question, stored)
    report = _report(benchmark, questions, tally.hits, tally.by_category, tally.latency)
    report |= tally.answer_report(services, answers)
    report["query_embedding_ms_per_question"] = round(embedder.seconds_per_text * 1000, 2)
    return report


@dataclass(frozen=True)
class _LineIndex:
    """Every window's lines (a conversation's turns), a BM25 over them, and the window each line is from."""

    lines: list[tuple[int, str]]
    bm25: PlainBM25
    window: np.ndarray

    @classmethod
    def of(cls, benchmark: Benchmark) -> _LineIndex:
        """The line index of `benchmark`'s windows."""
        lines = [(p, line) for p, w in enumerate(benchmark.windows) for line in _lines(w)]
        return cls(lines, PlainBM25([line for _, line in lines]), np.asarray([p for p, _ in lines]))

    def best(self, question: str, visible: np.ndarray) -> dict[str, str]:
        """The visible line BM25 ranks first for `question`, and it with its neighbours (empty when none)."""
        best = top(self.bm25.scores(question, visible[self.window]), visible[self.window], 1)
        return {
            "bm25 best line": self.lines[best[0]][1] if best else "",
            "bm25 best 3-line window": " ".join(t for _, t in self.lines[max(0, best[0] - 1) : best[0] + 2])
            if best
            else "",
        }


def _baseline_rankings(
    bm25: PlainBM25,
    stored: StoredWindows,
    visible: np.ndarray,
    query_embedding: list[float],
    question: EvalQuestion,
    latency: dict[str, list[float]],
) -> dict[str, list[int]]:
    """The baselines' top windows among the visible ones (BM25, dense, their RRF), each timed into `latency`."""
    depth = max(KS)
    started = time.perf_counter()
    lexical = top(bm25.scores(question.question, visible), visible, depth, positive_only=True)
    latency["bm25"].append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    dense = top(stored.embeddings @ np.asarray(query_embedding, dtype=np.float32), visible, depth)
    latency["dense"].append((time.perf_counter() - started) * 1000)
    return {"bm25": lexical, "dense": dense, "bm25+dense rrf": rrf([lexical, dense])[:depth]}


@dataclass
class _Tally:
    """What the questions asked so far scored: hits per method and mode, recall@10 per category, latencies,
    the multiple-choice outcomes, and how much of each free-text gold answer each source stated."""

    hits: dict[str, dict[str, list[list[bool]]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    by_category: dict[str, dict[str, list[bool]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    correct: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    abstained: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    chance: list[float] = field(default_factory=list)
    stated: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))

    def score_rankings(self, rankings: dict[str, list[int]], question: EvalQuestion, stored: StoredWindows) -> None:
        """Count each method's hits; a window from after the question was asked is a bug, not a miss."""
        for name, ranked in rankings.items():
            if any(stored.end_s[p] > question.asked_at.timestamp() for p in ranked):
                raise AssertionError(f"{name} returned a window from after the question was asked")
            result = _hits(ranked, question, stored)
            for mode, values in result.items():
                self.hits[name][mode].append(values)
            self.by_category[question.category][name].append(result["exact"][KS.index(10)])

    def score_choice(self, choosing: Services, user_id: str, question: EvalQuestion, stored: StoredWindows) -> None:
        """Ask the multiple-choice model, time it, count its letter (overall and per category) and citations."""
        started = time.perf_counter()
        choice = multiple_choice(choosing, user_id, question, stored)
        self.latency[CHOICE_CITED].append((time.perf_counter() - started) * 1000)
        for group in ("all", question.category):
            self.correct[group].append(choice.letter == question.answer)
            self.abstained[group].append(choice.letter is None)
        self.chance.append(1 / len(question.choices))
        for mode, values in _hits(choice.cited, question, stored).items():
            self.hits[CHOICE_CITED][mode].append(values)  # over the questions with choices

    def answer_report(self, services: Services, answers: bool) -> dict[str, Any]:
        """The report's answer words (when any were stated) and multiple-choice accuracy (with `answers`)."""
        report: dict[str, Any] = {}
        if self.stated:
            report["answer_words"] = {
                name: {
                    "f1": round(float(np.mean([f for f, _ in v])), 4),
                    "gold_share": round(float(np.mean([g for _, g in v])), 4),
                    "questions": len(v),
                }
                for name, v in self.stated.items()
            }
        if answers:
            report["multiple_choice_accuracy"] = {
                name: {
                    "accuracy": round(float(np.mean(v)), 4),
                    "questions": len(v),
                    "abstained": int(sum(self.abstained[name])),
                }
                for name, v in self.correct.items()
            }
            report["multiple_choice_chance"] = round(float(np.mean(self.chance)), 4) if self.chance else None
            report["multiple_choice_model"] = _choice_model(services)
        return report


def _lines(window: EvalWindow) -> list[str]:
    """A window's lines as said (a conversation's turns), for quoting the best line."""
    return [line.strip() for line in (window.transcript or window.caption or "").splitlines() if line.strip()]


def answer_words(said: str, gold: str) -> tuple[float, float]:
    """Token F1 of `said` against the gold answer, and the share of the gold answer's words it states."""
    from collections import Counter

    from worldmm.eval.baselines import tokenize

    got, want = Counter(tokenize(said)), Counter(tokenize(gold))
    if not want:
        return 0.0, 0.0
    common = sum((got & want).values())
    share = sum(1 for w in want if w in got) / len(want)
    if not common:
        return 0.0, share
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall), share


def _choice_model(services: Services) -> str:
    llm = services.reader_llm if services.settings.reader_enabled else services.llm
    return str(getattr(llm, "model_id", type(llm).__name__))


def _report(
    benchmark: Benchmark,
    questions: list[EvalQuestion],
    hits: dict[str, dict[str, list[list[bool]]]],
    by_category: dict[str, dict[str, list[bool]]],
    latency: dict[str, list[float]],
) -> dict[str, Any]:
    methods: dict[str, Any] = {}
    for name, modes in hits.items():
        methods[name] = {
            mode: {f"R@{k}": round(float(np.mean([row[i] for row in rows])), 4) for i, k in enumerate(KS)}
            for mode, rows in modes.items()
        }
        times = sorted(latency.get(name, []))
        methods[name]["latency_ms"] = {
            "p50": round(statistics.median(times), 2) if times else None,
            "p95": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2) if times else None,
        }
    return {
        "benchmark": benchmark.name,
        "windows": len(benchmark.windows),
        "questions": len(questions),
        "methods": methods,
        "recall_at_10_by_category": {
            category: {name: round(float(np.mean(v)), 4) for name, v in per.items()}
            | {"questions": len(next(iter(per.values())))}
            for category, per in sorted(by_category.items())
        },
    }


def markdown_table(report: dict[str, Any]) -> str:
    """The report's recall table (exact window; lenient ±30 s in brackets) and latency."""
    header = "| method | " + " | ".join(f"R@{k}" for k in KS) + " | p50 ms | p95 ms |"
    lines = [header, "|" + "---|" * (len(KS) + 3)]
    for name, values in report["methods"].items():
        cells = [f"{values['exact'][f'R@{k}']:.3f} ({values['lenient'][f'R@{k}']:.3f})" for k in KS]
        lat = [values["latency_ms"][p] for p in ("p50", "p95")]
        timing = " | ".join("–" if v is None else f"{v:.1f}" for v in lat)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {timing} |")
    return "\n".join(lines)


def run_eval(
    services: Services,
    benchmark: Benchmark,
    *,
    user_id: str,
    out: Path | None,
    progress: bool = True,
    answers: bool = False,
    sample: int | None = None,
) -> dict[str, Any]:
    """Build (resumable) and evaluate; writes the JSON report to `out` when given."""
    build = build_memory(services, user_id, benchmark, progress=progress)
    report = evaluate(services, user_id, benchmark, progress=progress, answers=answers, sample=sample)
    report = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {_cpu_count()} cores, Python {platform.python_version()}",
        "embedding_provider": services.settings.embedding_provider,
        "extraction": str(services.settings.extraction_backend),
        "summaries": str(services.settings.summary_backend),
        "user_id": user_id,
        "build": build,
    } | report
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
