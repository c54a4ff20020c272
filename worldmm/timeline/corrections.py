"""Entity corrections: a user renames an entity the recogniser misnamed, or merges one it split ("Marko" is
"Marco"), and retrieval and answers use the correction from then on.

Every retrieval path names an entity by its canonical row (`coalesce(canonical_entity_id, id)`) and seeds a
question's names on surface forms, so a correction is three writes in one transaction: the canonical name of
every row of the group, on a merge the group's rows pointed at the other entity, and the corrected name as a
surface form (so a question saying "Marco" finds it, and ingest resolves a later "Marco" to it). A merge
changes the graphs' nodes: the user's graph generations are bumped in the same transaction (a process without
Redis revalidates on them) and the cached graphs dropped after it. Each correction leaves an audit row.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import and_, func, or_, select, update

from worldmm.db.models import Entity, EntityCorrection
from worldmm.db.queries.memories import bump_graph_generations, lock_corrections
from worldmm.errors import Forbidden
from worldmm.memory.entities import normalize_surface_form
from worldmm.timeline.models import EntityCorrected

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from worldmm.db.engine import Database

ENTITY_NOT_YOURS = "entity not found or not yours"


class EntityCorrections:
    """Renames and merges of one user's entities; `invalidate(user_id)` drops that user's cached graphs."""

    def __init__(self, db: Database, invalidate: Callable[[str], None]) -> None:
        self.db = db
        self._invalidate = invalidate

    def correct(self, user_id: str, entity_id: str, name: str) -> EntityCorrected:
        """Call `entity_id`'s entity `name`: merged into the entity of that name if the user has one, else
        renamed. Forbidden when the entity is not the caller's (or does not exist)."""
        try:
            named_id = uuid.UUID(entity_id)
        except ValueError as exc:
            raise Forbidden(ENTITY_NOT_YOURS) from exc
        name = normalize_surface_form(name)
        with self.db.unit_of_work(user_id) as session:
            # One correction at a time per user: two merges crossing each other must not point two groups at
            # each other.
            lock_corrections(session, user_id)
            row = session.scalars(select(Entity).where(Entity.id == named_id, Entity.user_id == user_id)).first()
            if row is None:
                raise Forbidden(ENTITY_NOT_YOURS)
            root_id = row.canonical_entity_id or row.id
            root = session.scalars(select(Entity).where(Entity.id == root_id, Entity.user_id == user_id)).one()
            old_name = root.canonical_name or root.surface_form
            target_id = self._named(session, user_id, name) or root_id
            merged = target_id != root_id
            if merged:
                session.execute(
                    update(Entity)
                    .where(Entity.user_id == user_id, or_(Entity.id == root_id, Entity.canonical_entity_id == root_id))
                    .values(canonical_entity_id=target_id)
                )
            session.execute(
                update(Entity)
                .where(Entity.user_id == user_id, or_(Entity.id == target_id, Entity.canonical_entity_id == target_id))
                .values(canonical_name=name)
            )
            if not self._has_form(session, user_id, name):
                session.add(
                    Entity(user_id=user_id, canonical_entity_id=target_id, surface_form=name, canonical_name=name)
                )
            if merged:
                bump_graph_generations(session, user_id)
            session.add(
                EntityCorrection(
                    user_id=user_id,
                    entity_id=root_id,
                    target_entity_id=target_id,
                    action="merge" if merged else "rename",
                    old_name=old_name,
                    new_name=name,
                )
            )
            session.flush()
            aliases = self._aliases(session, user_id, target_id)
        if merged:
            self._invalidate(user_id)
        return EntityCorrected(
            entity_id=str(named_id),
            canonical_id=str(target_id),
            name=name,
            action="merge" if merged else "rename",
            aliases=aliases,
        )

    @staticmethod
    def _aliases(session: Session, user_id: str, target_id: uuid.UUID) -> list[str]:
        """Every surface form of the entity `target_id` and its group, oldest first."""
        return list(
            session.scalars(
                select(Entity.surface_form)
                .where(Entity.user_id == user_id, or_(Entity.id == target_id, Entity.canonical_entity_id == target_id))
                .order_by(Entity.created_at, Entity.id)
            ).all()
        )

    @staticmethod
    def _named(session: Session, user_id: str, name: str) -> uuid.UUID | None:
        """The canonical entity the user already calls `name` (its canonical name, else a surface form)."""
        lower = name.lower()
        row = session.execute(
            select(Entity.id, Entity.canonical_entity_id)
            .where(
                Entity.user_id == user_id,
                or_(
                    and_(Entity.canonical_entity_id.is_(None), func.lower(Entity.canonical_name) == lower),
                    func.lower(Entity.surface_form) == lower,
                ),
            )
            .order_by(Entity.canonical_entity_id.is_(None).desc(), Entity.created_at, Entity.id)
        ).first()
        return None if row is None else (row.canonical_entity_id or row.id)

    @staticmethod
    def _has_form(session: Session, user_id: str, name: str) -> bool:
        found = select(Entity.id).where(Entity.user_id == user_id, func.lower(Entity.surface_form) == name.lower())
        return session.scalars(found).first() is not None
