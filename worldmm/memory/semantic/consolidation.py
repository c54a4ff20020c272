"""Semantic consolidation: each new semantic triple is added, merged, updated, removed or dropped.

For each new triple (spec 001; audit and shadow mode from spec 003):

1. candidates: the user's valid semantic triples with cosine similarity ≥ `consolidation_threshold`
   (top `consolidation_top_k`), read in a short transaction;
2. decision: none → ADD without a model call; else the model (`consolidation.txt`) answers ADD / MERGE /
   UPDATE / REMOVE / NONE with target ids — no transaction is open while it thinks;
3. apply: one transaction under the user's advisory lock re-reads the candidates; if they changed since
   step 1 (another summary consolidated meanwhile) the decision is stale and steps 1–3 run again
   (bounded), so two summaries never act on the same stale snapshot.

Semantics: ADD inserts the triple; MERGE and UPDATE insert the merged/updated triple and invalidate the
targets; REMOVE invalidates the targets and inserts nothing (the new fact says they stopped being true);
NONE changes nothing. Invalidation sets `invalidated_at` and `invalidated_by_segment_id`; nothing is ever
deleted. Every decision writes a `worldmm_memory_history` row, applied or not: in `shadow` mode
decisions are audited with `applied=False` and no triple or entity is written.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools import Logger
from pydantic import BaseModel, Field
from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from worldmm.config import ConsolidationMode
from worldmm.crashpoints import crash_point
from worldmm.db.models import ConsolidationEvent, MemoryHistory, MemoryType, Segment, Triple
from worldmm.db.queries.consolidation import lock_consolidation, semantic_candidates
from worldmm.errors import ModelOutputError, WorldMMError
from worldmm.llm.port import LLM, LLMResponse
from worldmm.llm.structured import build_request, parse_model
from worldmm.llm.usage import UsageLog, record_usage
from worldmm.memory.entities import EntityJudge, EntityPorts
from worldmm.memory.openie import ExtractedTriple, Extraction, clean_field

if TYPE_CHECKING:
    from worldmm.graph.cache.port import GraphCache
    from worldmm.memory.settings import MemorySettings

logger = Logger(child=True)


class ConsolidationJudge(EntityJudge, Protocol):
    """What consolidation asks of the extraction port (`Extractor`): a summary's semantic triples and the
    judgement on a new triple, besides entity resolution's."""

    def semantic_triples(self, summary: str, usage: UsageLog | None = None) -> Extraction: ...

    def decide(
        self, new: ExtractedTriple, candidates: list[CandidateTriple]
    ) -> tuple[Decision, LLMResponse | None]: ...


class ConsolidationPorts(EntityPorts, Protocol):
    """The ports semantic consolidation uses: entity resolution's and the graph cache it invalidates."""

    @property
    def extractor(self) -> ConsolidationJudge: ...

    @property
    def graph_cache(self) -> GraphCache: ...


CONSOLIDATION_PURPOSE = "consolidation"
MAX_SNAPSHOT_ATTEMPTS = 5


class ConsolidationConflictError(WorldMMError):
    """Other consolidations kept changing the candidates; the caller should retry later."""


class ConsolidationAnswer(BaseModel):
    """The consolidation prompt's answer."""

    event: ConsolidationEvent
    target_ids: list[str] = Field(default_factory=list)
    triple: tuple[str, str, str] | None = None
    reason: str = ""


@dataclass(frozen=True)
class CandidateTriple:
    """An existing valid semantic triple similar to a new one."""

    id: uuid.UUID
    subject: str
    predicate: str
    object: str
    similarity: float

    @property
    def text(self) -> str:
        return f"{self.subject} {self.predicate} {self.object}"


@dataclass(frozen=True)
class Decision:
    """What to do with one new triple, and the snapshot of candidates it was decided on."""

    event: ConsolidationEvent
    targets: tuple[uuid.UUID, ...]
    stored: ExtractedTriple | None
    reason: str
    model: str | None
    candidates: tuple[CandidateTriple, ...]
    proposed: ConsolidationEvent | None = None  # the model's event when it had to be corrected


@dataclass
class ConsolidationReport:
    """What consolidating one summary's semantic triples did."""

    extracted: int = 0
    events: Counter[str] = field(default_factory=Counter)
    applied: bool = True
    warnings: list[str] = field(default_factory=list)


def find_candidates(
    session: Session, user_id: str, embedding: list[float], *, threshold: float, k: int
) -> list[CandidateTriple]:
    """The user's valid semantic triples at cosine similarity ≥ `threshold` to `embedding`, nearest first."""
    rows = semantic_candidates(session, user_id, embedding, threshold=threshold, k=k)
    return [CandidateTriple(r.id, r.subject, r.predicate, r.object, float(r.similarity)) for r in rows]


def decide(
    llm: LLM, settings: MemorySettings, new: ExtractedTriple, candidates: list[CandidateTriple]
) -> tuple[Decision, LLMResponse | None]:
    """Decide what `new` does to memory given its `candidates` (no candidates: ADD, no model call)."""
    snapshot = tuple(candidates)
    if not candidates:
        return Decision(ConsolidationEvent.ADD, (), new, "no similar fact in memory", None, snapshot), None
    listing = "\n".join(
        f'- id={c.id} similarity={c.similarity:.2f}: ["{c.subject}", "{c.predicate}", "{c.object}"]'
        for c in candidates
    )
    request = build_request(
        CONSOLIDATION_PURPOSE,
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=ConsolidationAnswer,
        new_triple=f'["{new.subject}", "{new.predicate}", "{new.object}"]',
        candidates=listing,
    )
    response = llm.complete(request)
    try:
        answer = parse_model(response.text, ConsolidationAnswer)
    except ModelOutputError as exc:
        # A duplicate fact is recoverable (a later consolidation merges it); a lost one is not.
        reason = f"unparsable consolidation answer, kept as a new fact ({exc})"
        return Decision(ConsolidationEvent.ADD, (), new, reason, response.model, snapshot), response
    return _validated(answer, new, snapshot, settings, response.model), response


NEAR_IDENTICAL = 0.95
"""Without a model, a candidate at least this similar is the same fact (NONE); anything else is ADDed."""


def decide_by_similarity(new: ExtractedTriple, candidates: list[CandidateTriple]) -> Decision:
    """The model-free decision (spaCy extraction): a near-identical known fact → NONE, else ADD.

    Without a model an update cannot be told from a new fact, so nothing is ever invalidated here.
    """
    snapshot = tuple(candidates)
    best = max(candidates, key=lambda c: c.similarity, default=None)
    if best is not None and best.similarity >= NEAR_IDENTICAL:
        reason = f"near-identical to a known fact (similarity {best.similarity:.2f}), no model to merge"
        return Decision(ConsolidationEvent.NONE, (best.id,), None, reason, None, snapshot)
    reason = "no similar fact in memory" if best is None else "no model to judge an update; kept as a new fact"
    return Decision(ConsolidationEvent.ADD, (), new, reason, None, snapshot)


def _validated(
    answer: ConsolidationAnswer,
    new: ExtractedTriple,
    snapshot: tuple[CandidateTriple, ...],
    settings: MemorySettings,
    model: str,
) -> Decision:
    """The model's answer checked against the snapshot: unknown targets dropped, event corrected if empty."""
    known = {str(c.id): c.id for c in snapshot}
    targets = tuple(dict.fromkeys(known[t.strip()] for t in answer.target_ids if t.strip() in known))
    stored = new
    if answer.triple is not None:
        parts = [clean_field(p, settings.max_field_chars) for p in answer.triple]
        if all(parts):
            s, p, o = (x for x in parts if x is not None)
            stored = ExtractedTriple(s, p, o)
    event = answer.event
    proposed = None
    if event in (ConsolidationEvent.MERGE, ConsolidationEvent.UPDATE) and not targets:
        event, proposed = ConsolidationEvent.ADD, answer.event
    elif event == ConsolidationEvent.REMOVE and not targets:
        event, proposed = ConsolidationEvent.NONE, answer.event
    keeps = event in (ConsolidationEvent.ADD, ConsolidationEvent.MERGE, ConsolidationEvent.UPDATE)
    return Decision(
        event,
        targets if event != ConsolidationEvent.ADD else (),
        stored if keeps else None,
        answer.reason.strip()[:1000],
        model,
        snapshot,
        proposed,
    )


def consolidate_summary(
    services: ConsolidationPorts, user_id: str, segment_id: uuid.UUID, summary: str
) -> ConsolidationReport:
    """Extract semantic triples from a 10 min summary and consolidate them into the user's memory."""
    usage = UsageLog()
    extraction = services.extractor.semantic_triples(summary, usage)
    triples = extraction.triples
    if usage.entries:
        with services.db.unit_of_work(user_id) as session:
            usage.flush(session, user_id, segment_id)
    report = consolidate_triples(services, user_id, segment_id, triples, context=summary)
    report.warnings[:0] = extraction.warnings
    logger.info(
        "semantic_consolidated",
        extra={"segment_id": str(segment_id), "triple_count": len(triples), "events": dict(report.events)},
    )
    return report


def consolidate_triples(
    services: ConsolidationPorts,
    user_id: str,
    segment_id: uuid.UUID,
    triples: list[ExtractedTriple],
    *,
    context: str = "",
) -> ConsolidationReport:
    """Consolidate `triples` (learned from segment `segment_id`) one by one, in order."""
    settings = services.memory_settings
    mode = settings.consolidation_mode
    report = ConsolidationReport(extracted=len(triples), applied=mode == ConsolidationMode.APPLY)
    if not triples:
        return report
    with services.db.unit_of_work(user_id) as session:
        valid_at = session.scalar(
            select(Segment.start_time).where(Segment.user_id == user_id, Segment.id == segment_id)
        )
    embeddings = services.embedder.embed([t.text for t in triples])
    try:
        for new, embedding in zip(triples, embeddings, strict=True):
            event = _consolidate_one(services, user_id, segment_id, new, embedding, valid_at, context)
            crash_point("consolidation.applied")
            report.events[event.value] += 1
    finally:
        if mode == ConsolidationMode.APPLY and any(
            report.events[e.value] for e in ConsolidationEvent if e != ConsolidationEvent.NONE
        ):
            # Inserted or invalidated triples change this user's semantic graph (and only that one).
            services.graph_cache.invalidate(user_id, MemoryType.SEMANTIC)
    return report


def _snapshot(services: ConsolidationPorts, user_id: str, embedding: list[float]) -> list[CandidateTriple]:
    settings = services.memory_settings
    with services.db.unit_of_work(user_id) as session:
        return find_candidates(
            session,
            user_id,
            embedding,
            threshold=settings.consolidation_threshold,
            k=settings.consolidation_top_k,
        )


def _lock_user(session: Session, user_id: str) -> None:
    lock_consolidation(session, user_id)


def _consolidate_one(
    services: ConsolidationPorts,
    user_id: str,
    segment_id: uuid.UUID,
    new: ExtractedTriple,
    embedding: list[float],
    valid_at: datetime | None,
    context: str,
) -> ConsolidationEvent:
    settings = services.memory_settings
    apply = settings.consolidation_mode == ConsolidationMode.APPLY
    for attempt in range(1, MAX_SNAPSHOT_ATTEMPTS + 1):
        candidates = _snapshot(services, user_id, embedding)
        decision, response = services.extractor.decide(new, candidates)
        prepared = _prepare(services, user_id, new, embedding, decision, context) if apply else None
        crash_point("consolidation.decided")
        with services.db.unit_of_work(user_id) as session:
            _lock_user(session, user_id)
            current = find_candidates(
                session,
                user_id,
                embedding,
                threshold=settings.consolidation_threshold,
                k=settings.consolidation_top_k,
            )
            if {c.id for c in current} != {c.id for c in decision.candidates}:
                logger.info(
                    "consolidation_snapshot_stale", extra={"attempt": attempt, "segment_id": str(segment_id)}
                )
                continue
            if response is not None:
                record_usage(session, user_id, segment_id, CONSOLIDATION_PURPOSE, response)
            triple_id = _apply(session, user_id, segment_id, decision, prepared, valid_at) if apply else None
            session.add(
                MemoryHistory(
                    user_id=user_id,
                    segment_id=segment_id,
                    triple_id=triple_id or (decision.targets[0] if decision.targets else None),
                    event=decision.event,
                    mode=settings.consolidation_mode.value,
                    applied=apply,
                    inputs=_inputs(new, decision, attempt),
                    model=decision.model,
                    reason=decision.reason or None,
                )
            )
            return decision.event
    raise ConsolidationConflictError(
        f"candidates kept changing for {new.text!r} after {MAX_SNAPSHOT_ATTEMPTS} tries"
    )


@dataclass(frozen=True)
class _Prepared:
    """The stored triple's entity ids and embedding, computed before the write transaction."""

    subject_id: uuid.UUID
    object_id: uuid.UUID | None
    object_literal: str | None
    embedding: list[float]


def _prepare(
    services: ConsolidationPorts,
    user_id: str,
    new: ExtractedTriple,
    embedding: list[float],
    decision: Decision,
    context: str,
) -> _Prepared | None:
    """Resolve the stored triple's entities and embed it (model calls, so outside any transaction)."""
    from worldmm.memory.entities import known_entities, resolve_entities

    stored = decision.stored
    if stored is None:
        return None
    ids = resolve_entities(services, user_id, [stored.subject], context=context)
    subject_id = ids.get(stored.subject)
    if subject_id is None:
        raise ModelOutputError(f"subject {stored.subject!r} could not be resolved to an entity")
    # The object is an entity only when one of that name exists (a person, a place): "coffee" stays a literal.
    object_id = known_entities(services, user_id, [stored.object]).get(stored.object)
    vector = embedding if stored == new else services.embedder.embed([stored.text])[0]
    return _Prepared(subject_id, object_id, None if object_id else stored.object, vector)


def _apply(
    session: Session,
    user_id: str,
    segment_id: uuid.UUID,
    decision: Decision,
    prepared: _Prepared | None,
    valid_at: datetime | None,
) -> uuid.UUID | None:
    """Write the decision; returns the inserted triple's id, if any."""
    now = datetime.now(UTC)
    if decision.targets and decision.event in (
        ConsolidationEvent.MERGE,
        ConsolidationEvent.UPDATE,
        ConsolidationEvent.REMOVE,
    ):
        session.execute(
            update(Triple)
            .where(
                Triple.user_id == user_id,
                Triple.id.in_(decision.targets),
                Triple.memory_type == MemoryType.SEMANTIC,
                Triple.invalidated_at.is_(None),
            )
            .values(invalidated_at=now, invalidated_by_segment_id=segment_id)
        )
    if prepared is None or decision.stored is None:
        return None
    # Two surface forms can resolve to one entity: the same fact twice from one summary is kept once.
    return session.execute(
        insert(Triple)
        .values(
            id=uuid.uuid4(),
            segment_id=segment_id,
            user_id=user_id,
            memory_type=MemoryType.SEMANTIC,
            subject_entity_id=prepared.subject_id,
            predicate=decision.stored.predicate,
            object_entity_id=prepared.object_id,
            object_literal=prepared.object_literal,
            embedding=prepared.embedding,
            valid_at=valid_at or now,
        )
        .on_conflict_do_nothing()
        .returning(Triple.id)
    ).scalar_one_or_none()


def _inputs(new: ExtractedTriple, decision: Decision, attempt: int) -> dict[str, Any]:
    return {
        "new": [new.subject, new.predicate, new.object],
        "candidates": [
            {
                "id": str(c.id),
                "triple": [c.subject, c.predicate, c.object],
                "similarity": round(c.similarity, 4),
            }
            for c in decision.candidates
        ],
        "targets": [str(t) for t in decision.targets],
        "stored": None
        if decision.stored is None
        else [decision.stored.subject, decision.stored.predicate, decision.stored.object],
        "proposed_event": decision.proposed.value if decision.proposed else None,
        "attempt": attempt,
    }
