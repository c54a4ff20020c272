"""The summariser port: one summary of a 3 min / 10 min / 1 h span from its children.

Two adapters, chosen by SUMMARY_PROVIDER (`Settings.summary_backend`): `LLMSummarizer` (the
`merge_captions` prompt) and `ExtractiveSummarizer`, which needs no model: it keeps the children's most
informative sentences and speech lines — TF-IDF weight and centrality, with MMR-style redundancy
removal — in chronological order, under a length cap. Deterministic and fast; what it keeps are the
words that were there (names, objects, plans), which is what retrieval matches on.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from worldmm.config import SummaryProvider
from worldmm.media.captioner import HEARD_PREFIX
from worldmm.memory.episodic.summary_tree import ChildCaption, merge_captions
from worldmm.scale import Scale

if TYPE_CHECKING:
    from worldmm.llm.port import LLM
    from worldmm.llm.usage import UsageLog
    from worldmm.memory.settings import MemorySettings

MERGE_PURPOSE = "merge_captions"


class Summarizer(Protocol):
    """Children of one summary slot → the summary text."""

    def summarize(self, scale: int, children: Sequence[ChildCaption], usage: UsageLog | None = None) -> tuple[str, str]:
        """The summary of `children` at `scale` (seconds) and the id of the model that wrote it; a model call
        is added to `usage` (the caller writes it with the summary)."""
        ...


class LLMSummarizer:
    """The merge_captions prompt (capable models, the aws profile)."""

    def __init__(self, llm: LLM, settings: MemorySettings) -> None:
        self.llm = llm
        self.settings = settings

    def summarize(self, scale: int, children: Sequence[ChildCaption], usage: UsageLog | None = None) -> tuple[str, str]:
        summary, response = merge_captions(self.llm, self.settings, scale, children)
        if usage is not None:
            usage.add(MERGE_PURPOSE, response)
        return summary, response.model


EXTRACTIVE_MODEL = "extractive-tfidf-mmr"
WRITTEN_SOURCE = "written"
EXTRACTIVE_SOURCE = "extractive"


def caption_source_of(model: str) -> str:
    """A summary's `caption_source` from the model id its summariser returned: extractive, or written by a model."""
    return EXTRACTIVE_SOURCE if model == EXTRACTIVE_MODEL else WRITTEN_SOURCE

# Times SUMMARY_MAX_CHARS; 3 min summaries get 1.0.
SCALE_BUDGET: dict[int, float] = {Scale.TEN_MIN: 1.5, Scale.HOUR: 2.0}
MMR_LAMBDA = 0.7
DUPLICATE_SIMILARITY = 0.8  # a sentence this close to one already kept adds nothing
MAX_UNIT_CHARS = 300
MIN_CONTENT_WORDS = {False: 2, True: 3}  # caption sentence / speech line: fewer content words is filler

_SPEECH = re.compile(r"^\s*(?:\[[0-9:.\s-]+\]\s*)?([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s+(\S.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
_STOP_TEXT = """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves i'm i'll i've it's that's don't let's we're you're they're there's can't
    okay ok yeah yes yep oh ah uh um hmm huh right alright well like really got get gonna wanna also still
    one thing things something anything everything everyone someone go going see look looking looked
    know think mean say said"""
_STOP = frozenset(_STOP_TEXT.split())


@dataclass(frozen=True)
class _Unit:
    """A candidate piece of a summary: a caption sentence or a speech line, in time order."""

    order: int
    text: str
    speech: bool
    weights: dict[str, float]


def _pieces(child: ChildCaption) -> list[tuple[str, bool]]:
    """A child's caption sentences and speech lines (from its caption and transcript), in order. A caption that
    is only what was heard run together is left out where the transcript has the same words in lines, each after
    its speaker: a sentence cut from it would lose who said it."""
    pieces: list[tuple[str, bool]] = []
    caption = child.caption
    if caption.startswith(HEARD_PREFIX) and "\n" in child.transcript.strip():
        caption = ""
    for line in [*caption.splitlines(), *child.transcript.splitlines()]:
        match = _SPEECH.match(line)
        if match:
            pieces.append((f"{match.group(1)}: {' '.join(match.group(2).split())}", True))
        else:
            pieces.extend((s, False) for s in _SENTENCE_END.split(" ".join(line.split())) if s)
    return pieces


def _content_words(text: str, speech: bool) -> list[str]:
    body = text.split(":", 1)[1] if speech else text
    return [w for w in _WORD.findall(body.lower()) if w not in _STOP and len(w) > 1]


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(k, 0.0) for k, v in a.items())


def _units(children: Sequence[ChildCaption]) -> list[_Unit]:
    ordered = sorted(children, key=lambda c: (c.start_time, c.segment_id))
    raw: list[tuple[str, bool, list[str]]] = []
    seen: set[str] = set()
    for child in ordered:
        for text, speech in _pieces(child):
            words = _content_words(text, speech)
            key = " ".join(words)
            if len(set(words)) < MIN_CONTENT_WORDS[speech] or key in seen or len(text) > MAX_UNIT_CHARS:
                continue
            seen.add(key)
            raw.append((text, speech, words))
    df = Counter(w for _, _, words in raw for w in set(words))
    n = len(raw)
    units: list[_Unit] = []
    for order, (text, speech, words) in enumerate(raw):
        tf = Counter(words)
        weights = {w: (1 + math.log(c)) * (math.log((1 + n) / (1 + df[w])) + 1) for w, c in tf.items()}
        norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
        units.append(_Unit(order, text, speech, {w: v / norm for w, v in weights.items()}))
    return units


def _relevance(units: list[_Unit]) -> list[float]:
    """Centrality (cosine to the span's centroid) blended with information (distinct-term IDF mass)."""
    centroid: Counter[str] = Counter()
    for unit in units:
        centroid.update(unit.weights)
    norm = math.sqrt(sum(v * v for v in centroid.values())) or 1.0
    centre = {w: v / norm for w, v in centroid.items()}
    n = len(units)
    df = Counter(w for u in units for w in u.weights)
    info = [sum(math.log((1 + n) / (1 + df[w])) + 1 for w in u.weights) for u in units]
    top = max(info, default=1.0) or 1.0
    return [0.5 * _cosine(u.weights, centre) + 0.5 * (i / top) for u, i in zip(units, info, strict=True)]


def extractive_summary(children: Sequence[ChildCaption], max_chars: int) -> str:
    """The children's most informative, least redundant sentences and speech lines, in time order."""
    units = _units(children)
    if not units:  # nothing informative: the first caption, cut (a summary is never empty)
        first = next((c.caption for c in sorted(children, key=lambda c: c.start_time) if c.caption.strip()), "")
        return " ".join(first.split())[:max_chars]
    relevance = _relevance(units)
    redundancy = [0.0] * len(units)
    chosen: list[_Unit] = []
    used = 0
    remaining = set(range(len(units)))
    while remaining:
        best = max(remaining, key=lambda i: (MMR_LAMBDA * relevance[i] - (1 - MMR_LAMBDA) * redundancy[i], -i))
        remaining.discard(best)
        unit = units[best]
        if redundancy[best] >= DUPLICATE_SIMILARITY or used + len(unit.text) + 1 > max_chars:
            continue
        chosen.append(unit)
        used += len(unit.text) + 1
        for i in remaining:
            redundancy[i] = max(redundancy[i], _cosine(units[i].weights, unit.weights))
    return _render(sorted(chosen, key=lambda u: u.order))


def _render(units: list[_Unit]) -> str:
    """Caption sentences run together; each speech line on its own line."""
    lines: list[str] = []
    prose: list[str] = []
    for unit in units:
        if unit.speech:
            if prose:
                lines.append(" ".join(prose))
                prose = []
            lines.append(unit.text)
        else:
            prose.append(unit.text)
    if prose:
        lines.append(" ".join(prose))
    return "\n".join(lines)


class ExtractiveSummarizer:
    """Model-free summaries (the local profile): see `extractive_summary`."""

    def __init__(self, settings: MemorySettings) -> None:
        self.settings = settings

    def summarize(self, scale: int, children: Sequence[ChildCaption], usage: UsageLog | None = None) -> tuple[str, str]:
        if not children:
            raise ValueError("nothing to merge")
        budget = int(self.settings.summary_max_chars * SCALE_BUDGET.get(scale, 1.0))
        return extractive_summary(children, budget), EXTRACTIVE_MODEL


def build_summarizer(
    settings: MemorySettings, llm: Callable[[], LLM], reader: Callable[[], LLM] | None = None
) -> Summarizer:
    """The summariser the settings name; `llm` is called only for the LLM adapter, `reader` (the local reader's
    model; `llm` when not given) only for the written one."""
    if settings.summary_backend == SummaryProvider.EXTRACTIVE:
        return ExtractiveSummarizer(settings)
    if settings.summary_backend == SummaryProvider.WRITTEN:
        from worldmm.memory.episodic.written import WrittenSummarizer

        return WrittenSummarizer((reader or llm)(), settings, ExtractiveSummarizer(settings))
    return LLMSummarizer(llm(), settings)
