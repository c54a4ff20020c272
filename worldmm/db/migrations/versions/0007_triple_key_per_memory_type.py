"""A fact is unique per segment *and memory type*: a 10 min summary may hold the same fact as an episodic
triple (what happened) and as a semantic one (what is known), as the model-free extractor yields.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX IF EXISTS uq_triple_in_segment")
    op.execute(
        "CREATE UNIQUE INDEX uq_triple_in_segment ON worldmm_triples (segment_id, memory_type, subject_entity_id, "
        "lower(predicate), coalesce(object_entity_id::text, lower(object_literal)))"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS uq_triple_in_segment")
    op.execute(
        "CREATE UNIQUE INDEX uq_triple_in_segment ON worldmm_triples (segment_id, subject_entity_id, "
        "lower(predicate), coalesce(object_entity_id::text, lower(object_literal)))"
    )
