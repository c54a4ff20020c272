"""The reaper covers summaries: for each summary left pending or failed too long, one complete window
of its span, so re-invoking that window re-checks (and resumes) the summaries above it.

Like `worldmm_stale_pending_windows`, a SECURITY DEFINER function that returns windows' keys only.
3 min slot i spans windows 20*(i/3) + 6*(i%3) .. +5; 10 min slot j spans 20j .. 20j+19; 1 h slot h
spans 120h .. 120h+119 (worldmm.memory.episodic.summary_tree).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import context, op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("""
        CREATE FUNCTION worldmm_stale_summary_windows(older_than interval, max_rows integer)
        RETURNS TABLE (user_id varchar, session_id varchar, window_index integer, frame_count integer)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
            WITH stale AS (
                SELECT s.user_id, s.session_id, s.updated_at,
                       CASE s.duration_seconds
                           WHEN 180 THEN 20 * (s.window_index / 3) + 6 * (s.window_index % 3)
                           WHEN 600 THEN 20 * s.window_index
                           ELSE 120 * s.window_index
                       END AS first_window,
                       CASE s.duration_seconds WHEN 180 THEN 6 WHEN 600 THEN 20 ELSE 120 END AS span
                FROM worldmm_segments s
                WHERE s.duration_seconds IN (180, 600, 3600)
                  AND s.processing_status <> 'complete'
                  AND s.updated_at < now() - older_than
                ORDER BY s.updated_at
                LIMIT max_rows
            )
            SELECT w.user_id, w.session_id, w.window_index, w.frame_count
            FROM stale
            CROSS JOIN LATERAL (
                SELECT c.user_id, c.session_id, c.window_index, c.frame_count
                FROM worldmm_segments c
                WHERE c.user_id = stale.user_id AND c.session_id = stale.session_id
                  AND c.duration_seconds = 30 AND c.processing_status = 'complete'
                  AND c.window_index >= stale.first_window
                  AND c.window_index < stale.first_window + stale.span
                ORDER BY c.window_index DESC
                LIMIT 1
            ) w
            ORDER BY stale.updated_at
        $$""")
    op.execute("REVOKE ALL ON FUNCTION worldmm_stale_summary_windows(interval, integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION worldmm_stale_summary_windows(interval, integer) TO {app_role}")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS worldmm_stale_summary_windows(interval, integer)")
