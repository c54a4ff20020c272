"""Local claims know their owner: `claim_owner` names the process holding a window's claim (host, boot
id, pid, start time; see worldmm.ingest.claim_owner), so a claim whose process is gone is taken over at
once. NULL on the aws profile, where the lease alone decides.

`worldmm_claimed_windows` lets the reaper see what is being produced, for every user, with its owner: a
claimed window, or for a summary being produced the last complete window of its span (keys and owners
only, like `worldmm_stale_pending_windows`).

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
    # A claimed 30 s window is itself; a summary being produced maps to the last complete window of its
    # span (as in worldmm_stale_summary_windows, 0006), whose re-run resumes the summary.
    op.execute("""
        CREATE FUNCTION worldmm_claimed_windows(max_rows integer)
        RETURNS TABLE (user_id varchar, session_id varchar, window_index integer, frame_count integer,
                       claim_owner varchar)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
            WITH owned AS (
                SELECT s.user_id, s.session_id, s.window_index, s.duration_seconds, s.frame_count,
                       s.claim_owner, s.updated_at
                FROM worldmm_segments s
                WHERE s.processing_status = 'pending'
                  AND s.claim_owner IS NOT NULL
                  AND (s.duration_seconds <> 30 OR s.claim_token IS NOT NULL)
                ORDER BY s.updated_at
                LIMIT max_rows
            )
            SELECT o.user_id, o.session_id, o.window_index, o.frame_count, o.claim_owner
            FROM owned o WHERE o.duration_seconds = 30
            UNION ALL
            SELECT w.user_id, w.session_id, w.window_index, w.frame_count, o.claim_owner
            FROM owned o
            CROSS JOIN LATERAL (
                SELECT c.user_id, c.session_id, c.window_index, c.frame_count
                FROM worldmm_segments c
                WHERE c.user_id = o.user_id AND c.session_id = o.session_id
                  AND c.duration_seconds = 30 AND c.processing_status = 'complete'
                  AND c.window_index >= CASE o.duration_seconds
                      WHEN 180 THEN 20 * (o.window_index / 3) + 6 * (o.window_index % 3)
                      WHEN 600 THEN 20 * o.window_index
                      ELSE 120 * o.window_index END
                  AND c.window_index < CASE o.duration_seconds
                      WHEN 180 THEN 20 * (o.window_index / 3) + 6 * (o.window_index % 3) + 6
                      WHEN 600 THEN 20 * o.window_index + 20
                      ELSE 120 * o.window_index + 120 END
                ORDER BY c.window_index DESC
                LIMIT 1
            ) w
            WHERE o.duration_seconds <> 30
        $$""")
    op.execute("REVOKE ALL ON FUNCTION worldmm_claimed_windows(integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION worldmm_claimed_windows(integer) TO {app_role}")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS worldmm_claimed_windows(integer)")
    op.drop_column("worldmm_segments", "claim_owner")
