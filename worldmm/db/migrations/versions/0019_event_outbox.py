"""Events for app developers (issue 65): a transactional outbox of `WindowProcessed`, `WindowFailed` and
`SessionProcessed`, published after the write commits (EventBridge on aws, `GET /events` locally).

- `worldmm_event_outbox`: one row per event. `id` is derived from (user, subject) — md5 as a uuid, the same
  value `worldmm.events.outbox.event_id` computes — so an event recorded or published twice keeps its id and
  a consumer can drop the duplicate. `seq` orders a user's stream (SSE ids, `Last-Event-ID`); it is not
  unique, so a user copied between database cells keeps theirs. `detail` holds
  ids and counts only, never memory content. Tenant table: row-level security on `app.user_id`; forget-me's
  sweep of every `user_id` table erases it.
- A trigger on `worldmm_segments` writes the window events in the transaction that changes a 30 s window's
  status to `complete` or `failed`: no write path can commit an outcome without its event.
- `worldmm_unpublished_events` / `worldmm_mark_events_published` (SECURITY DEFINER): the dispatcher's and
  the reaper's view across users, of the outbox only. `worldmm_sessions_awaiting_event`: sessions with window
  events and no `SessionProcessed`, for the recovery sweep to re-check.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from alembic import context, op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("""
        CREATE TABLE worldmm_event_outbox (
            id uuid PRIMARY KEY,
            seq bigserial NOT NULL,
            user_id varchar(128) NOT NULL,
            session_id varchar(128) NOT NULL,
            subject varchar(256) NOT NULL,
            detail_type varchar(64) NOT NULL,
            detail jsonb NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            published_at timestamptz,
            CONSTRAINT uq_event_subject UNIQUE (user_id, subject)
        )""")
    op.execute("CREATE INDEX ix_event_outbox_user_seq ON worldmm_event_outbox (user_id, seq)")
    op.execute("CREATE INDEX ix_event_outbox_unpublished ON worldmm_event_outbox (seq) WHERE published_at IS NULL")
    op.execute("CREATE INDEX ix_event_outbox_session ON worldmm_event_outbox (user_id, session_id)")
    op.execute("ALTER TABLE worldmm_event_outbox ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE worldmm_event_outbox FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON worldmm_event_outbox "
        "USING (user_id = current_setting('app.user_id', true)) "
        "WITH CHECK (user_id = current_setting('app.user_id', true))"
    )
    # The owner (the SECURITY DEFINER functions below) reads and marks every user's events.
    op.execute("CREATE POLICY owner_dispatch ON worldmm_event_outbox TO CURRENT_USER USING (true) WITH CHECK (true)")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON worldmm_event_outbox TO {app_role}")
    op.execute(f"GRANT USAGE ON SEQUENCE worldmm_event_outbox_seq_seq TO {app_role}")

    # Window outcomes: in the transaction of the status change (30 s windows only, as the reaper's functions).
    op.execute("""
        CREATE FUNCTION worldmm_window_event() RETURNS trigger
        LANGUAGE plpgsql SET search_path = public AS $$
        DECLARE
            kind varchar;
            subj varchar;
            body jsonb;
        BEGIN
            IF NEW.duration_seconds <> 30 OR NEW.processing_status NOT IN ('complete', 'failed') THEN
                RETURN NULL;
            END IF;
            IF TG_OP = 'UPDATE' AND OLD.processing_status = NEW.processing_status THEN
                RETURN NULL;
            END IF;
            kind := CASE WHEN NEW.processing_status = 'complete' THEN 'WindowProcessed' ELSE 'WindowFailed' END;
            subj := 'window:' || NEW.id || ':' || NEW.processing_status || ':' || NEW.ingest_attempts;
            body := jsonb_build_object(
                'sessionId', NEW.session_id,
                'windowIndex', NEW.window_index,
                'segmentId', NEW.id,
                'attempt', NEW.ingest_attempts,
                'frameCount', NEW.frame_count
            );
            IF NEW.processing_status = 'complete' THEN
                body := body || jsonb_build_object('enriched', NEW.enriched, 'visualStored', NEW.visual_stored);
            ELSE
                body := body || jsonb_build_object('errorType', split_part(coalesce(NEW.error, ''), ':', 1));
            END IF;
            INSERT INTO worldmm_event_outbox (id, user_id, session_id, subject, detail_type, detail)
            VALUES (md5(NEW.user_id || ':' || subj)::uuid, NEW.user_id, NEW.session_id, subj, kind, body)
            ON CONFLICT DO NOTHING;
            RETURN NULL;
        END
        $$""")
    op.execute("""
        CREATE TRIGGER worldmm_segments_window_event
        AFTER INSERT OR UPDATE OF processing_status ON worldmm_segments
        FOR EACH ROW EXECUTE FUNCTION worldmm_window_event()""")

    op.execute("""
        CREATE FUNCTION worldmm_unpublished_events(max_rows integer)
        RETURNS TABLE (id uuid, seq bigint, user_id varchar, session_id varchar, detail_type varchar,
                       detail jsonb, created_at timestamptz)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
            SELECT o.id, o.seq, o.user_id, o.session_id, o.detail_type, o.detail, o.created_at
            FROM worldmm_event_outbox o
            WHERE o.published_at IS NULL
            ORDER BY o.seq
            LIMIT max_rows
        $$""")
    op.execute("""
        CREATE FUNCTION worldmm_mark_events_published(ids uuid[])
        RETURNS integer
        LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
            WITH marked AS (
                UPDATE worldmm_event_outbox SET published_at = now()
                WHERE id = ANY(ids) AND published_at IS NULL
                RETURNING 1
            )
            SELECT count(*)::integer FROM marked
        $$""")
    op.execute("""
        CREATE FUNCTION worldmm_sessions_awaiting_event(since interval, max_rows integer)
        RETURNS TABLE (user_id varchar, session_id varchar)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
            SELECT o.user_id, o.session_id
            FROM worldmm_event_outbox o
            WHERE o.detail_type IN ('WindowProcessed', 'WindowFailed') AND o.created_at > now() - since
            GROUP BY o.user_id, o.session_id
            HAVING NOT EXISTS (
                SELECT 1 FROM worldmm_event_outbox p
                WHERE p.user_id = o.user_id AND p.session_id = o.session_id AND p.detail_type = 'SessionProcessed'
            )
            ORDER BY max(o.seq)
            LIMIT max_rows
        $$""")
    for signature in (
        "worldmm_unpublished_events(integer)",
        "worldmm_mark_events_published(uuid[])",
        "worldmm_sessions_awaiting_event(interval, integer)",
    ):
        op.execute(f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO {app_role}")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS worldmm_sessions_awaiting_event(interval, integer)")
    op.execute("DROP FUNCTION IF EXISTS worldmm_mark_events_published(uuid[])")
    op.execute("DROP FUNCTION IF EXISTS worldmm_unpublished_events(integer)")
    op.execute("DROP TRIGGER IF EXISTS worldmm_segments_window_event ON worldmm_segments")
    op.execute("DROP FUNCTION IF EXISTS worldmm_window_event()")
    op.execute("DROP TABLE IF EXISTS worldmm_event_outbox")
