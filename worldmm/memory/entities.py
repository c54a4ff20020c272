"""Entity resolution (spec 001): exact surface match → embedding ≥ threshold → confirm → alias row.

The confirmation is the extraction port's judgement (`Extractor.confirm_same`): the LLM prompt, or the
spaCy adapter's lemma rule.

All surface forms of one window are resolved together: one embedding call, one nearest-canonical scan
per new form, one batched confirmation call. Rows are added with ON CONFLICT DO NOTHING on
the unique (user_id, lower(surface_form)) index and re-read, so concurrent windows converge on one row.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from aws_lambda_powertools import Logger
from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from worldmm.db.models import Entity
from worldmm.db.port import DatabasePorts
from worldmm.db.queries.entities import (
    delete_corrections_of,
    delete_unnamed_groups,
    insert_entity_rows,
    nearest_canonical_for_each,
)
from worldmm.errors import ModelOutputError
from worldmm.llm.structured import build_request, parse_model
from worldmm.llm.usage import UsageLog
from worldmm.memory.settings import MemorySettings, MemorySettingsPorts

if TYPE_CHECKING:
    from worldmm.llm.port import LLM
    from worldmm.memory.embedding.port import TextEmbedder
    from worldmm.memory.settings import MemorySettings

logger = Logger(child=True)


class EntityJudge(Protocol):
    """The judgement entity resolution asks of the extraction port (`Extractor.confirm_same`)."""

    def confirm_same(
        self, candidates: Sequence[Candidate], context: str, usage: UsageLog | None = None
    ) -> set[str]: ...


class EntityPorts(DatabasePorts, MemorySettingsPorts, Protocol):
    """The ports entity resolution uses (the composition root's `Services` is one)."""

    @property
    def embedder(self) -> TextEmbedder: ...

    @property
    def extractor(self) -> EntityJudge: ...


CONFIRM_PURPOSE = "entity_confirm"

MAX_CONTEXT_CHARS = 1500


class EntityDecision(BaseModel):
    index: int
    same: bool


class EntityConfirmResult(BaseModel):
    """The entity_confirm prompt's answer: one decision per numbered pair."""

    decisions: list[EntityDecision]


@dataclass(frozen=True)
class Candidate:
    """A new surface form and the nearest canonical entity it might be another name of."""

    surface_form: str
    canonical_id: uuid.UUID
    canonical_name: str
    similarity: float


def normalize_surface_form(value: str, max_chars: int = 200) -> str:
    """Whitespace collapsed and cut; the resolution key is its lower-case form."""
    return " ".join(value.split())[:max_chars]


def _existing(session: Session, user_id: str, lowers: list[str]) -> dict[str, uuid.UUID]:
    rows = session.execute(
        select(func.lower(Entity.surface_form), Entity.id, Entity.canonical_entity_id).where(
            Entity.user_id == user_id, func.lower(Entity.surface_form).in_(lowers)
        )
    )
    return {lower: canonical or entity_id for lower, entity_id, canonical in rows}


def _nearest_canonicals(
    session: Session, user_id: str, forms: list[str], vectors: dict[str, list[float]]
) -> list[Candidate]:
    """The nearest canonical entity of each form, all forms in one statement (exact per-user scan)."""
    if not forms:
        return []
    rows = nearest_canonical_for_each(session, user_id, forms, [vectors[f] for f in forms])
    return [Candidate(r.form, r.id, r.canonical_name, 1.0 - float(r.distance)) for r in rows]


def _insert_entities(
    session: Session,
    user_id: str,
    forms: list[str],
    vectors: dict[str, list[float]],
    aliases: dict[str, Candidate],
) -> dict[str, uuid.UUID]:
    """New canonical rows, or alias rows for confirmed forms; a form another writer added first is kept,
    and the others' canonical ids are returned (by lower-case form) and need no re-read."""
    if not forms:
        return {}
    rows = [
        {
            "id": uuid.uuid4(),
            "user_id": user_id,
            "surface_form": form,
            "canonical_entity_id": aliases[form].canonical_id if form in aliases else None,
            "canonical_name": aliases[form].canonical_name if form in aliases else form,
            "embedding": vectors[form],
        }
        for form in forms
    ]
    inserted = insert_entity_rows(session, rows)
    return {form.lower(): canonical or entity_id for form, entity_id, canonical in inserted}


def _insert_and_resolve(
    session: Session,
    user_id: str,
    forms: list[str],
    vectors: dict[str, list[float]],
    aliases: dict[str, Candidate],
) -> dict[str, uuid.UUID]:
    """`_insert_entities`, then a read of only the forms another writer added first."""
    resolved = _insert_entities(session, user_id, forms, vectors, aliases)
    taken = [f.lower() for f in forms if f.lower() not in resolved]
    if taken:
        resolved.update(_existing(session, user_id, taken))
    return resolved


def confirm_candidates(
    llm: LLM, settings: MemorySettings, candidates: list[Candidate], context: str, usage: UsageLog | None
) -> set[str]:
    """Ask the model, in one call, which candidates are the same entity; returns their surface forms."""
    pairs = "\n".join(
        f'{i}. new: "{c.surface_form}" | known: "{c.canonical_name}"'
        for i, c in enumerate(candidates, start=1)
    )
    request = build_request(
        CONFIRM_PURPOSE,
        model=settings.extraction_model,
        max_tokens=settings.extraction_max_tokens,
        response_model=EntityConfirmResult,
        context=context[:MAX_CONTEXT_CHARS] or "(none)",
        pairs=pairs,
    )
    response = llm.complete(request)
    if usage is not None:
        usage.add(CONFIRM_PURPOSE, response)
    try:
        result = parse_model(response.text, EntityConfirmResult)
    except ModelOutputError as exc:
        # Unconfirmed means a new canonical entity: a duplicate node is recoverable, a wrong merge is not.
        logger.warning("entity_confirm_unparsable", extra={"error": str(exc)})
        return set()
    return {
        candidates[d.index - 1].surface_form
        for d in result.decisions
        if d.same and 1 <= d.index <= len(candidates)
    }


def known_entities(services: EntityPorts, user_id: str, surface_forms: list[str]) -> dict[str, uuid.UUID]:
    """The canonical entity of each form that already names one (exact, case-insensitive); no row is created."""
    max_chars = services.memory_settings.max_field_chars
    lowers = {raw: normalize_surface_form(raw, max_chars).lower() for raw in surface_forms}
    if not any(lowers.values()):
        return {}
    with services.db.unit_of_work(user_id) as session:
        found = _existing(session, user_id, [lower for lower in lowers.values() if lower])
    return {raw: found[lower] for raw, lower in lowers.items() if lower in found}


def resolve_entities(
    services: EntityPorts,
    user_id: str,
    surface_forms: list[str],
    context: str = "",
    *,
    usage: UsageLog | None = None,
) -> dict[str, uuid.UUID]:
    """Map each surface form to its canonical entity id, creating canonical or alias rows as needed.

    Keys are the given strings; forms differing only in case or spacing share one entity.
    """
    settings = services.memory_settings
    forms: dict[str, str] = {}  # lower → first normalized spelling
    for raw in surface_forms:
        form = normalize_surface_form(raw, settings.max_field_chars)
        if form:
            forms.setdefault(form.lower(), form)
    if not forms:
        return {}

    with services.db.unit_of_work(user_id) as session:
        resolved = _existing(session, user_id, list(forms))
    missing = [form for lower, form in forms.items() if lower not in resolved]

    if missing:
        vectors = dict(zip(missing, services.embedder.embed(missing), strict=True))
        with services.db.unit_of_work(user_id) as session:
            # A concurrent window may have created some meanwhile: exact matches need no model.
            resolved.update(_existing(session, user_id, [f.lower() for f in missing]))
            pending = [f for f in missing if f.lower() not in resolved]
            candidates = [
                c
                for c in _nearest_canonicals(session, user_id, pending, vectors)
                if c.similarity >= settings.entity_match_threshold
            ]
            if not candidates:  # nothing to confirm: write in this same short transaction
                resolved.update(_insert_and_resolve(session, user_id, pending, vectors, {}))
        if candidates:
            confirmed = services.extractor.confirm_same(candidates, context, usage)
            aliases = {c.surface_form: c for c in candidates if c.surface_form in confirmed}
            with services.db.unit_of_work(user_id) as session:
                resolved.update(_insert_and_resolve(session, user_id, pending, vectors, aliases))
        logger.debug("entities_resolved", extra={"new": len(missing), "candidates": len(candidates)})

    out: dict[str, uuid.UUID] = {}
    for raw in surface_forms:
        form = normalize_surface_form(raw, settings.max_field_chars)
        if form and form.lower() in resolved:
            out[raw] = resolved[form.lower()]
    return out


def delete_unreferenced_entities(session: Session, user_id: str, candidates: set[uuid.UUID]) -> int:
    """Delete the entity groups (a canonical entity and its aliases) of `candidates` that no triple names any
    more — what a forgotten span, or a window whose claim was lost, leaves behind — with the corrections that
    named them (a corrected name alone does not keep a forgotten entity). The count of entity rows."""
    if not candidates:
        return 0
    gone = delete_unnamed_groups(session, user_id, list(candidates))
    if gone:
        delete_corrections_of(session, user_id, gone)
    return len(gone)
