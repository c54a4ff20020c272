"""Ingest claims: a lease on a window's segment so one invocation enriches it at a time.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # claim_token names the invocation enriching the row; claimed_at lets a crashed claim expire.
    op.execute("ALTER TABLE worldmm_segments ADD COLUMN claim_token uuid")
    op.execute("ALTER TABLE worldmm_segments ADD COLUMN claimed_at timestamptz")
    op.execute(
        "CREATE INDEX ix_segments_session_window ON worldmm_segments "
        "(user_id, session_id, duration_seconds, window_index)"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_segments_session_window")
    op.execute("ALTER TABLE worldmm_segments DROP COLUMN IF EXISTS claimed_at")
    op.execute("ALTER TABLE worldmm_segments DROP COLUMN IF EXISTS claim_token")
