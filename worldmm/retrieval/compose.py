"""The answer composed from retrieved memories: the sentence that answers best, when it was said, which memory.

Each candidate sentence (`sentences`) is scored by features of what the question asks for (`asks`) combined by
weights fitted on development questions (`bench.fit_answer_weights`). The answer is "I don't remember that." when
the question names a thing, rare in English, that no memory of the user says, or when the best score is below the
fitted threshold. `docs/answers.md` tells the steps.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np
from aws_lambda_powertools import Logger

from worldmm.retrieval.asks import PERSON, Asked, analyse, lexemes, named_as, rarity, sentence_labels, stem
from worldmm.retrieval.citations import evidence
from worldmm.retrieval.models import MemoryKind, RetrievedMemory
from worldmm.retrieval.sentences import Candidate, candidates
from worldmm.retrieval.vocabulary import Vocabulary

if TYPE_CHECKING:
    from worldmm.retrieval.port import ComposePorts

logger = Logger(child=True)

NO_MEMORY = "I don't remember that."

FEATURES = (
    "lexical", "context", "meaning", "kind", "no_kind", "statement", "retrieved", "semantic", "speaker", "short",
)  # fmt: skip
"""What each candidate sentence is scored by (`features`), in the order of the fitted weights."""


@dataclass(frozen=True)
class Weights:
    """The fitted combination: a weight per feature and a bias; the score below which the best sentence means
    that nothing found answers."""

    features: tuple[float, ...]
    bias: float
    refuse_below: float
    refuse_unheard_rarity: float = math.inf
    """A question naming a thing no memory says, at least this rare in English (`asks.rarity`), is refused."""


@cache
def fitted_weights() -> Weights:
    """The weights `bench.fit_answer_weights` fitted on development questions."""
    raw = json.loads(resources.files("worldmm.retrieval").joinpath("answer_weights.json").read_text())
    scalars = {name: float(raw[name]) for name in Weights.__dataclass_fields__ if name != "features"}
    return Weights(features=tuple(float(raw["features"][name]) for name in FEATURES), **scalars)


@dataclass(frozen=True)
class Composed:
    """A composed answer and the memories it rests on (empty when nothing relevant was retrieved)."""

    answer: str
    memories: list[RetrievedMemory]
    read: bool = False
    """Whether the reader wrote the answer (else it is the quoted sentence)."""
    unheard: str | None = None
    """The thing the question names that no memory says, when that is why the answer is "I don't remember that."."""
    asked_as: str | None = None
    """The question as answered, when a name in it was spelt as the memories spell it (`spelt_as_said`)."""


@dataclass(frozen=True)
class Scored:
    """The candidate sentences, best first, their features (one row each) and their scores."""

    candidates: list[Candidate]
    features: np.ndarray
    scores: list[float]


Reader = Callable[[str, Candidate], str | None]
"""Writes a checked short answer from the best sentence (`reader.read_answer`), or None."""


def features(services: ComposePorts, asked: Asked, question: str, pool: list[Candidate]) -> np.ndarray:
    """One row of `FEATURES` per candidate (see the module docstring)."""
    said = [lexemes(c.quote) | (lexemes(c.speaker) if c.speaker else frozenset()) for c in pool]
    idf = _idf(asked.terms | asked.event, said)
    main = asked.terms - asked.event if asked.side else asked.terms
    # meaning: of a sentence, or for "after X" of the one before it (X, when it is the answer), "before X" after it
    sides = [{"after": c.previous, "before": c.following}.get(asked.side or "", c.quote) for c in pool]
    meaning = _cosines(services, question, sides)
    labels = sentence_labels([c.quote for c in pool], frozenset(stem for _, stem, _ in asked.things))
    rows, context_terms = [], asked.event if asked.side else main
    for i, c in enumerate(pool):
        around = frozenset().union(*(lexemes(s) for s in _around(c, asked) if s))
        has_kind = bool(asked.labels & labels[i]) or (bool(asked.labels & {"PERSON"}) and c.speaker is not None)
        named = c.speaker is not None and any(c.speaker.casefold() in n.casefold() for n in asked.names)
        rows.append([
            _coverage(main, said[i], idf), _coverage(context_terms, around - said[i], idf), meaning[i],
            float(has_kind), float(bool(asked.labels) and not has_kind), float(not c.text.endswith("?")),
            1.0 / (1.0 + c.rank), float(c.memory.memory_type == MemoryKind.SEMANTIC), float(named),
            float(len(c.text.split()) < 4),
        ])  # fmt: skip
    return np.asarray(rows, dtype=np.float64).reshape(len(pool), len(FEATURES))


def _around(c: Candidate, asked: Asked) -> tuple[str | None, ...]:
    """What was said around a sentence: before it for "after X", after it for "before X", else both."""
    return {"after": (c.previous,), "before": (c.following,)}.get(asked.side or "", (c.previous, c.following))


def _idf(terms: frozenset[str], said: list[frozenset[str]]) -> dict[str, float]:
    n = len(said)
    return {t: math.log(1 + (n + 1) / (1 + sum(t in s for s in said))) for t in terms}


def _coverage(terms: frozenset[str], said: frozenset[str], idf: dict[str, float]) -> float:
    """The share of `terms`, each by its rarity, that `said` states."""
    total = sum(idf[t] for t in terms)
    return sum(idf[t] for t in terms & said) / total if total else 0.0


def _cosines(services: ComposePorts, question: str, texts: list[str | None]) -> list[float]:
    """Cosine of the question with each text (0 for None); zeros without an embedder whose cosines follow meaning."""
    present = [t for t in texts if t is not None]
    if not present or not getattr(services.embedder, "measures_meaning", True):
        return [0.0] * len(texts)
    try:
        matrix = np.asarray(services.embedder.embed([question, *present]), dtype=np.float32)
    except Exception as exc:  # the shared words still choose; the log says why
        logger.warning("sentence embeddings unavailable: %s", type(exc).__name__)
        return [0.0] * len(texts)
    norms = np.linalg.norm(matrix, axis=1).clip(min=1e-12)
    cosines = iter(matrix[1:] @ matrix[0] / (norms[1:] * norms[0]))
    return [float(next(cosines)) if t is not None else 0.0 for t in texts]


def _unheard(asked: Asked, said: Vocabulary, memories: list[RetrievedMemory]) -> str | None:
    """The rarest thing `asked` names (what it is most about), when rare enough to refuse on and said neither in
    `said` nor in the `memories` in hand (a name one letter off a word said counts: Marco, Marko); else None."""
    in_hand = Vocabulary(lexemes(" ".join(m.text for m in memories)))
    named = [(rarity(text) or 0.0, text, stem, name) for text, stem, name in asked.things]
    rarest = max(named, default=None)
    if rarest is None or rarest[0] < fitted_weights().refuse_unheard_rarity:
        return None
    _, text, stem, name = rarest
    return None if any(stem in words or (name and words.near(stem)) for words in (said, in_hand)) else text


def spelt_as_said(question: str, asked: Asked, said: Vocabulary) -> str:
    """`question` with each name it gives that no memory says, but one letter off one that a memory does, spelt as
    the memory spells it: speech recognition writes a name it heard before with another spelling (Marco, Marko)."""
    for _, head, name in asked.things:
        heard = said.spelling(head) if name and head not in said else None
        words = question.split(" ")
        for i, word in enumerate(words if heard else ()):  # the name alone, not a longer word it begins
            core = word.strip(".,;:!?\"'").removesuffix("'s")
            words[i] = word.replace(core, str(heard).capitalize()) if core and stem(core) == head else word
        question = " ".join(words)
    return question


def _named(question: str, asked: Asked, pool: list[Candidate]) -> tuple[str, Asked, list[Candidate]]:
    """A question about a person by their relation ("my best friend") asked about the person a sentence names
    so ("What did Matthew want me to do?"), unless it asks who that is; the naming sentences are no answer."""
    for phrase, head in () if asked.labels & PERSON else asked.relations:
        said = [c.quote for c in pool if phrase.casefold() in c.quote.casefold()]
        name = next(filter(None, (named_as(quote, head) for quote in said)), None)
        if name is not None:
            question = question.replace(phrase, name, 1)
            rest = [c for c in pool if not any(quote.startswith(c.said) for quote in said) and c.quote not in said]
            return question, analyse(question), rest
    return question, asked, pool


def score(services: ComposePorts, question: str, memories: list[RetrievedMemory], asked: Asked | None = None) -> Scored:
    """Every candidate sentence of `memories` scored, best first (`asked`: the question's analysis, if made)."""
    pool = candidates(memories)
    weights = fitted_weights()
    question, asked, pool = _named(question, asked or analyse(question), pool)
    rows = features(services, asked, question, pool)
    first = rows @ np.asarray(weights.features) + weights.bias
    order = sorted(range(len(pool)), key=lambda i: -first[i])
    return Scored([pool[i] for i in order], rows[order], [float(first[i]) for i in order])


def compose_answer(
    services: ComposePorts,
    question: str,
    memories: list[RetrievedMemory],
    now: datetime,
    read: Reader | None = None,
    said: Vocabulary | None = None,
) -> Composed:
    """The best sentence of the memories, when it was said and which memory it comes from, after a short answer
    the reader wrote from it (checked against it) when it could; "I don't remember that." when the question
    names a rare thing that none of the user's memories says (`said`: every stem they say), or when the best
    score is below the fitted threshold."""
    asked = analyse(question)
    unheard = _unheard(asked, said, memories) if said is not None else None
    if unheard is not None:
        return Composed(NO_MEMORY, [], unheard=unheard)
    respelt = spelt_as_said(question, asked, said) if said is not None else question
    asked_as, question, asked = (respelt, respelt, analyse(respelt)) if respelt != question else (None, question, asked)
    scored = score(services, question, [m for m in memories if m.memory_type != MemoryKind.VISUAL], asked)
    if not scored.candidates or scored.scores[0] < fitted_weights().refuse_below:
        return Composed(NO_MEMORY, [], asked_as=asked_as)
    best = scored.candidates[0]
    # A short answer only from a sentence that names the kind of thing asked for: from "I shall call Ralph
    # later." the reader would write that Ralph asked for it; the quote, with when it was said, stands instead.
    names_kind = not asked.labels or bool(scored.features[0][FEATURES.index("kind")])
    written = read(question, best) if read is not None and names_kind else None
    said_when = f"{written}. ({evidence(best, now)}.)" if written is not None else f"{evidence(best, now)}."
    return Composed(said_when[:1].upper() + said_when[1:], [best.memory], read=written is not None, asked_as=asked_as)
