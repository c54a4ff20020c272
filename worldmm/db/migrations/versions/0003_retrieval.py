"""Retrieval indexes: the semantic retriever's exact per-user scan of valid semantic triples.

Without it the planner scans every triple of the user (episodic ones are the vast majority) to
find the few thousand valid semantic facts it ranks by cosine.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX ix_triples_valid_semantic ON worldmm_triples (user_id) "
        "WHERE memory_type = 'semantic' AND invalidated_at IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_triples_valid_semantic")
