"""Storing extracted triples: canonical entity FKs and literal objects.

Episodic triples carry no embedding: no query ranks them by vector (the episodic retriever walks their entity
graph; only valid semantic facts are searched by cosine, by the semantic retriever and consolidation). At
1536 dimensions the vector was ~9 kB of a triple row's ~10 kB (docs/cost.md); semantic facts are embedded
where consolidation stores them, once per distinct fact.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from worldmm.db.models import MemoryType
from worldmm.db.queries.triples import delete_episodic_derivatives, insert_triple_rows
from worldmm.memory.openie import ExtractedTriple


@dataclass(frozen=True)
class PreparedTriple:
    """A triple ready to insert: entity ids resolved, object an entity or a literal; `embedding` None for an
    episodic triple (see the module's note)."""

    subject_entity_id: uuid.UUID
    predicate: str
    object_entity_id: uuid.UUID | None
    object_literal: str | None
    text: str
    embedding: list[float] | None = None


def triple_entity_forms(triples: list[ExtractedTriple], entities: list[str]) -> list[str]:
    """The surface forms to resolve: the NER entities plus every triple subject not among them."""
    forms = list(entities)
    known = {e.lower() for e in entities}
    for t in triples:
        if t.subject.lower() not in known:
            known.add(t.subject.lower())
            forms.append(t.subject)
    return forms


def prepare_triples(triples: list[ExtractedTriple], entity_ids: dict[str, uuid.UUID]) -> list[PreparedTriple]:
    """Attach canonical ids (an object naming a known entity becomes an FK, else a literal)."""
    return prepare_triple_groups([triples], entity_ids)[0]


def prepare_triple_groups(
    groups: Sequence[list[ExtractedTriple]], entity_ids: dict[str, uuid.UUID]
) -> list[list[PreparedTriple]]:
    """`prepare_triples` for many texts' triples at once."""
    by_lower = {form.lower(): eid for form, eid in entity_ids.items()}
    usable = [[t for t in triples if t.subject.lower() in by_lower] for triples in groups]
    prepared: list[list[PreparedTriple]] = []
    for triples in usable:
        group: list[PreparedTriple] = []
        for t in triples:
            object_id = by_lower.get(t.object.lower())
            group.append(
                PreparedTriple(
                    subject_entity_id=by_lower[t.subject.lower()],
                    predicate=t.predicate,
                    object_entity_id=object_id,
                    object_literal=None if object_id else t.object,
                    text=t.text,
                )
            )
        prepared.append(group)
    return prepared


def insert_triples(
    session: Session,
    user_id: str,
    segment_id: uuid.UUID,
    triples: list[PreparedTriple],
    *,
    memory_type: MemoryType = MemoryType.EPISODIC,
    valid_at: datetime | None = None,
) -> int:
    """Insert `triples` for `segment_id`; a triple already in the segment is skipped. Returns rows added."""
    if not triples:
        return 0
    rows = [
        {
            "id": uuid.uuid4(),
            "segment_id": segment_id,
            "user_id": user_id,
            "memory_type": memory_type,
            "subject_entity_id": t.subject_entity_id,
            "predicate": t.predicate,
            "object_entity_id": t.object_entity_id,
            "object_literal": t.object_literal,
            "embedding": t.embedding,
            "valid_at": valid_at,
        }
        for t in triples
    ]
    return insert_triple_rows(session, rows)


def delete_segment_derivatives(session: Session, user_id: str, segment_id: uuid.UUID) -> None:
    """Remove a segment's episodic triples and visual embedding (a retried window starts clean)."""
    delete_derivatives_of(session, user_id, [segment_id])


def delete_derivatives_of(session: Session, user_id: str, segment_ids: Sequence[uuid.UUID]) -> None:
    """`delete_segment_derivatives` for many segments of `user_id` in two statements."""
    if not segment_ids:
        return
    delete_episodic_derivatives(session, user_id, segment_ids)
