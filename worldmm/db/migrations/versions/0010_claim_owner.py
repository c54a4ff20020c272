"""Local claims know their owner: `claim_owner` names the process holding a window's claim (host, boot
id, pid, start time; see worldmm.pipeline.claim_owner), so a claim whose process is gone is taken over at
once. NULL on the aws profile, where the lease alone decides.

`worldmm_claimed_windows` lets the reaper see the claimed windows of every user with their owners (keys
and owners only, like `worldmm_stale_pending_windows`).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.add_column("worldmm_segments", sa.Column("claim_owner", sa.String(256), nullable=True))
    op.execute("""
        CREATE FUNCTION worldmm_claimed_windows(max_rows integer)
        RETURNS TABLE (user_id varchar, session_id varchar, window_index integer, frame_count integer,
                       claim_owner varchar)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
            SELECT s.user_id, s.session_id, s.window_index, s.frame_count, s.claim_owner
            FROM worldmm_segments s
            WHERE s.duration_seconds = 30
              AND s.processing_status <> 'complete'
              AND s.claim_token IS NOT NULL
              AND s.claim_owner IS NOT NULL
            ORDER BY s.updated_at
            LIMIT max_rows
        $$""")
    op.execute("REVOKE ALL ON FUNCTION worldmm_claimed_windows(integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION worldmm_claimed_windows(integer) TO {app_role}")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS worldmm_claimed_windows(integer)")
    op.drop_column("worldmm_segments", "claim_owner")
