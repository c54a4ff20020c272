"""The answer composed from retrieved memories, without a model: the fact, when it happened, which memory.

This is the fixed plan's answer (a small local model cannot follow the agent's action format) and the
fallback whenever a capable model's structured answer fails validation. Relevance is decided by the
lexemes the lexical index uses (PostgreSQL's `english` text search configuration): a memory that
shares no lexeme with the question is not evidence for it, and with none left the answer is
"I don't remember that." — never the best-ranked memory quoted anyway.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from sqlalchemy import text

from worldmm.retrieval.models import MemoryKind, RetrievedMemory

if TYPE_CHECKING:
    from worldmm.services import Services

logger = Logger(service="worldmm", child=True)

NO_MEMORY = "I don't remember that."

_LEXEMES_SQL = """
SELECT q.n, array(SELECT lexeme FROM unnest(to_tsvector('english', q.t)) AS v(lexeme, positions, weights)) AS lexemes
FROM unnest(CAST(:texts AS text[])) WITH ORDINALITY AS q(t, n)
ORDER BY q.n
"""
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W\d_]{2,}", re.UNICODE)
# Only for when PostgreSQL cannot be reached (unit tests with retriever doubles): a rough stand-in.
_FALLBACK_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "you",
        "your",
        "was",
        "were",
        "are",
        "what",
        "who",
        "when",
        "where",
        "why",
        "how",
        "did",
        "does",
        "this",
        "that",
        "with",
        "for",
        "from",
        "have",
        "has",
        "had",
        "into",
        "onto",
        "about",
        "there",
        "their",
        "they",
        "them",
        "then",
        "than",
        "its",
        "it's",
        "our",
        "ours",
        "mine",
    ]
)
_SCALES = {30: "30-second", 180: "3-minute summary", 600: "10-minute summary", 3600: "1-hour summary"}


@dataclass(frozen=True)
class Composed:
    """A composed answer and the memories it rests on (empty when nothing relevant was retrieved)."""

    answer: str
    memories: list[RetrievedMemory]


def text_lexemes(services: Services, texts: list[str]) -> list[set[str]]:
    """Each text's stemmed, stop-word-free lexemes, as `to_tsvector('english', ...)` gives the index."""
    if not texts:
        return []
    try:
        with services.db.unit_of_work(None) as session:
            rows = session.execute(text(_LEXEMES_SQL), {"texts": texts}).all()
        return [set(row.lexemes) for row in rows]
    except Exception as exc:  # no database (unit tests): an approximation, and the log says so
        logger.warning("lexemes without PostgreSQL (approximate): %s", type(exc).__name__)
        return [_approximate_lexemes(t) for t in texts]


def _approximate_lexemes(value: str) -> set[str]:
    words = (w.casefold() for w in _WORD.findall(value))
    return {w.removesuffix("s") for w in words if len(w) >= 3 and w not in _FALLBACK_STOPWORDS}


def relevant_memories(services: Services, question: str, memories: list[RetrievedMemory]) -> list[RetrievedMemory]:
    """The memories sharing a lexeme with the question, best first, then in retrieval order.

    A shared lexeme counts by its rarity among the retrieved memories (BM25's idf over them): "drink"
    found in one of them says more than "morning" found in all.
    """
    question_lexemes, *memory_lexemes = text_lexemes(services, [question, *(m.text for m in memories)])
    count = len(memory_lexemes)
    frequency = Counter(lexeme for lexemes in memory_lexemes for lexeme in lexemes & question_lexemes)
    idf = {lexeme: math.log(1 + (count - df + 0.5) / (df + 0.5)) for lexeme, df in frequency.items()}
    weight = [sum(idf[lexeme] for lexeme in lexemes & question_lexemes) for lexemes in memory_lexemes]
    shared = [bool(lexemes & question_lexemes) for lexemes in memory_lexemes]
    order = sorted((i for i in range(count) if shared[i]), key=lambda i: (-weight[i], i))
    return [memories[i] for i in order]


def _pieces(memory_text: str) -> list[tuple[str, bool]]:
    """The sentences of a memory's text, each with whether it was heard (the transcript part) or not."""
    caption, marker, heard = memory_text.partition("(heard:")
    parts = [(caption, False)]
    if marker:
        parts.append((heard.strip().removesuffix(")"), True))
    return [(p.strip(), was_heard) for part, was_heard in parts for p in _SENTENCE.split(part) if p and p.strip()]


def best_sentence(services: Services, question: str, memory_text: str) -> tuple[str, bool]:
    """The sentence of `memory_text` sharing most lexemes with the question, and whether it was heard.

    A sentence that is itself a question states no fact: one that does, sharing any lexeme, goes first
    (in "When is your presentation?" / "My presentation is on Friday" the answer is the second). On a
    tie the sentence that says most (most lexemes) wins over a bare mention ("Sure, Marco."), then the first.
    """
    pieces = _pieces(memory_text)
    if not pieces:
        return memory_text.strip(), False
    if len(pieces) == 1:
        return pieces[0]
    question_lexemes, *piece_lexemes = text_lexemes(services, [question, *(p for p, _ in pieces)])

    def rank(i: int) -> tuple[bool, int, int, int]:
        shared = len(piece_lexemes[i] & question_lexemes)
        return (shared > 0 and not pieces[i][0].endswith("?"), shared, len(piece_lexemes[i]), -i)

    return pieces[max(range(len(pieces)), key=rank)]


def _clock(moment: datetime) -> str:
    return f"{moment.hour}:{moment.minute:02d}"


def describe_when(moment: datetime, now: datetime) -> str:
    """`moment` in plain words relative to `now`: "this morning at 8:14", "yesterday at 19:42", ..."""
    if moment.tzinfo is not None and now.tzinfo is not None:
        moment = moment.astimezone(now.tzinfo)
    day, today = moment.date(), now.date()
    if day == today:
        part = "this morning" if moment.hour < 12 else "this afternoon" if moment.hour < 18 else "this evening"
        return f"{part} at {_clock(moment)}"
    if day == today - timedelta(days=1):
        return f"yesterday at {_clock(moment)}"
    year = f" {moment.year}" if moment.year != now.year else ""
    return f"on {moment:%A} {moment.day} {moment:%B}{year} at {_clock(moment)}"


def _source(memory: RetrievedMemory) -> str:
    if memory.memory_type == MemoryKind.SEMANTIC:
        return "from what you know (semantic memory)"
    scale = _SCALES.get(memory.duration_seconds or 0, "")
    kind = f"{scale} {memory.memory_type.value}".strip()
    if memory.start_time and memory.end_time:
        return f"from your {kind} memory of {memory.start_time:%H:%M:%S}–{memory.end_time:%H:%M:%S}"
    return f"from your {kind} memory"


def compose_answer(services: Services, question: str, memories: list[RetrievedMemory], now: datetime) -> Composed:
    """The best relevant memory's fact, when it happened and which memory; "I don't remember that." without one."""
    relevant = relevant_memories(services, question, memories)
    if not relevant:
        return Composed(NO_MEMORY, [])
    best = relevant[0]
    fact, heard = best_sentence(services, question, best.text)
    when = describe_when(best.start_time, now) if best.start_time else ""
    lead = ", ".join(w for w in (when, "heard" if heard else "") if w)
    lead = f"{lead[0].upper()}{lead[1:]}: " if lead else ""
    return Composed(f'{lead}"{fact}" ({_source(best)}).', [best])
