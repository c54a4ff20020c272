"""Initial schema: memory tables, indexes, chat store, row-level security and the application role.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from alembic import context, op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TENANT_TABLES = (
    "worldmm_segments",
    "worldmm_entities",
    "worldmm_triples",
    "worldmm_visual_embeddings",
    "worldmm_memory_history",
    "worldmm_llm_usage",
    "worldmm_chats",
    "worldmm_chat_messages",
)


def _dims() -> tuple[int, int, str]:
    attrs = context.config.attributes
    return int(attrs["embedding_dim"]), int(attrs["visual_embedding_dim"]), str(attrs["app_role"])


def upgrade() -> None:
    text_dim, visual_dim, app_role = _dims()
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute("CREATE TYPE worldmm_processing_status AS ENUM ('pending', 'complete', 'failed')")
    op.execute("CREATE TYPE worldmm_memory_type AS ENUM ('episodic', 'semantic')")
    op.execute(
        "CREATE TYPE worldmm_consolidation_event AS ENUM ('ADD', 'MERGE', 'UPDATE', 'REMOVE', 'NONE')"
    )
    op.execute(f"""
        CREATE TABLE worldmm_segments (
            id uuid PRIMARY KEY,
            user_id varchar(128) NOT NULL,
            session_id varchar(128) NOT NULL,
            window_index integer NOT NULL,
            duration_seconds integer NOT NULL CHECK (duration_seconds > 0),
            start_time timestamptz NOT NULL,
            end_time timestamptz NOT NULL,
            caption text,
            transcript text,
            s3_video_key varchar(1024),
            s3_frames_key varchar(1024),
            parent_segment_id uuid REFERENCES worldmm_segments(id) ON DELETE SET NULL,
            processing_status worldmm_processing_status NOT NULL DEFAULT 'pending',
            source_session_id varchar(128),
            frame_count integer NOT NULL DEFAULT 0,
            enriched boolean NOT NULL DEFAULT false,
            visual_stored boolean NOT NULL DEFAULT false,
            source_fingerprint varchar(64),
            error text,
            caption_embedding vector({text_dim}),
            search_tsv tsvector GENERATED ALWAYS AS (
                to_tsvector('english'::regconfig, coalesce(caption, '') || ' ' || coalesce(transcript, ''))
            ) STORED,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT uq_segment_window UNIQUE (user_id, session_id, window_index, duration_seconds)
        )""")
    op.execute("CREATE INDEX ix_segments_user_time ON worldmm_segments (user_id, duration_seconds, start_time)")
    op.execute("CREATE INDEX ix_segments_status ON worldmm_segments (processing_status, updated_at)")
    op.execute("CREATE INDEX ix_segments_parent ON worldmm_segments (parent_segment_id)")
    op.execute("CREATE INDEX ix_segments_search ON worldmm_segments USING gin (search_tsv)")
    op.execute(
        "CREATE INDEX ix_segments_caption_embedding ON worldmm_segments "
        "USING hnsw (caption_embedding vector_cosine_ops)"
    )

    op.execute(f"""
        CREATE TABLE worldmm_entities (
            id uuid PRIMARY KEY,
            user_id varchar(128) NOT NULL,
            canonical_entity_id uuid REFERENCES worldmm_entities(id) ON DELETE CASCADE,
            surface_form varchar(512) NOT NULL,
            canonical_name varchar(512),
            embedding vector({text_dim}),
            created_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT ck_entity_canonical_name CHECK (
                canonical_entity_id IS NOT NULL OR canonical_name IS NOT NULL
            )
        )""")
    op.execute("CREATE UNIQUE INDEX uq_entity_surface ON worldmm_entities (user_id, lower(surface_form))")
    op.execute(
        "CREATE INDEX ix_entities_canonical_user ON worldmm_entities (user_id) WHERE canonical_entity_id IS NULL"
    )
    op.execute(
        "CREATE INDEX ix_entities_embedding_hnsw ON worldmm_entities "
        "USING hnsw (embedding vector_cosine_ops) WHERE canonical_entity_id IS NULL"
    )

    op.execute(f"""
        CREATE TABLE worldmm_triples (
            id uuid PRIMARY KEY,
            segment_id uuid NOT NULL REFERENCES worldmm_segments(id) ON DELETE CASCADE,
            user_id varchar(128) NOT NULL,
            memory_type worldmm_memory_type NOT NULL,
            subject_entity_id uuid NOT NULL REFERENCES worldmm_entities(id) ON DELETE CASCADE,
            predicate varchar(512) NOT NULL,
            object_entity_id uuid REFERENCES worldmm_entities(id) ON DELETE CASCADE,
            object_literal varchar(1024),
            embedding vector({text_dim}),
            created_at timestamptz NOT NULL DEFAULT now(),
            valid_at timestamptz,
            invalidated_at timestamptz,
            invalidated_by_segment_id uuid REFERENCES worldmm_segments(id) ON DELETE SET NULL,
            CONSTRAINT ck_triple_exactly_one_object CHECK ((object_entity_id IS NULL) <> (object_literal IS NULL))
        )""")
    op.execute("CREATE INDEX ix_triples_user_type ON worldmm_triples (user_id, memory_type)")
    op.execute("CREATE INDEX ix_triples_segment ON worldmm_triples (segment_id)")
    op.execute(
        "CREATE UNIQUE INDEX uq_triple_in_segment ON worldmm_triples (segment_id, subject_entity_id, "
        "lower(predicate), coalesce(object_entity_id::text, lower(object_literal)))"
    )
    op.execute(
        "CREATE INDEX ix_triples_embedding_hnsw ON worldmm_triples USING hnsw (embedding vector_cosine_ops) "
        "WHERE invalidated_at IS NULL"
    )

    op.execute(f"""
        CREATE TABLE worldmm_visual_embeddings (
            id uuid PRIMARY KEY,
            segment_id uuid NOT NULL REFERENCES worldmm_segments(id) ON DELETE CASCADE,
            user_id varchar(128) NOT NULL,
            embedding vector({visual_dim}) NOT NULL,
            model varchar(256),
            timestamp timestamptz NOT NULL,
            CONSTRAINT uq_visual_segment UNIQUE (segment_id)
        )""")
    op.execute("CREATE INDEX ix_visual_user ON worldmm_visual_embeddings (user_id)")
    op.execute(
        "CREATE INDEX ix_visual_embedding_hnsw ON worldmm_visual_embeddings "
        "USING hnsw (embedding vector_cosine_ops)"
    )

    op.execute("""
        CREATE TABLE worldmm_memory_history (
            id uuid PRIMARY KEY,
            user_id varchar(128) NOT NULL,
            segment_id uuid REFERENCES worldmm_segments(id) ON DELETE SET NULL,
            triple_id uuid REFERENCES worldmm_triples(id) ON DELETE SET NULL,
            event worldmm_consolidation_event NOT NULL,
            mode varchar(16) NOT NULL,
            applied boolean NOT NULL,
            inputs jsonb NOT NULL,
            model varchar(256),
            reason text,
            created_at timestamptz NOT NULL DEFAULT now()
        )""")
    op.execute("CREATE INDEX ix_history_user_time ON worldmm_memory_history (user_id, created_at)")

    op.execute("""
        CREATE TABLE worldmm_llm_usage (
            id bigserial PRIMARY KEY,
            user_id varchar(128) NOT NULL,
            segment_id uuid REFERENCES worldmm_segments(id) ON DELETE SET NULL,
            purpose varchar(64) NOT NULL,
            model varchar(256) NOT NULL,
            prompt_tokens integer NOT NULL DEFAULT 0,
            completion_tokens integer NOT NULL DEFAULT 0,
            latency_ms double precision NOT NULL DEFAULT 0,
            created_at timestamptz NOT NULL DEFAULT now()
        )""")
    op.execute("CREATE INDEX ix_usage_user_time ON worldmm_llm_usage (user_id, created_at)")

    op.execute("""
        CREATE TABLE worldmm_chats (
            chat_id varchar(64) PRIMARY KEY,
            user_id varchar(128) NOT NULL,
            title varchar(256) NOT NULL DEFAULT '',
            last_message text NOT NULL DEFAULT '',
            created_at timestamptz NOT NULL,
            last_activity timestamptz NOT NULL
        )""")
    op.execute("CREATE INDEX ix_chats_user_activity ON worldmm_chats (user_id, last_activity, chat_id)")
    op.execute("""
        CREATE TABLE worldmm_chat_messages (
            chat_id varchar(64) NOT NULL REFERENCES worldmm_chats(chat_id) ON DELETE CASCADE,
            message_id varchar(32) NOT NULL,
            user_id varchar(128) NOT NULL,
            role varchar(16) NOT NULL CHECK (role IN ('user', 'assistant')),
            content text NOT NULL,
            created_at timestamptz NOT NULL,
            PRIMARY KEY (chat_id, message_id)
        )""")

    # Tenant isolation: a row is visible only to the unit of work whose app.user_id names its owner.
    # With no app.user_id set, current_setting(..., true) is NULL and no row matches.
    op.execute(f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{app_role}') THEN
                CREATE ROLE {app_role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
            END IF;
        END $$""")
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (user_id = current_setting('app.user_id', true)) "
            f"WITH CHECK (user_id = current_setting('app.user_id', true))"
        )
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {app_role}")
    # The owner (migrations, the reaper's SECURITY DEFINER function) may read segments across users.
    op.execute("CREATE POLICY owner_maintenance_read ON worldmm_segments FOR SELECT TO CURRENT_USER USING (true)")
    op.execute(f"GRANT USAGE ON SEQUENCE worldmm_llm_usage_id_seq TO {app_role}")
    op.execute(f"GRANT USAGE ON SCHEMA public TO {app_role}")

    # The orphan reaper must see stale pending windows of every user, and nothing else of theirs.
    op.execute("""
        CREATE FUNCTION worldmm_stale_pending_windows(older_than interval, max_rows integer)
        RETURNS TABLE (user_id varchar, session_id varchar, window_index integer, frame_count integer)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
            SELECT s.user_id, s.session_id, s.window_index, s.frame_count
            FROM worldmm_segments s
            WHERE s.duration_seconds = 30
              AND s.processing_status <> 'complete'
              AND s.updated_at < now() - older_than
            ORDER BY s.updated_at
            LIMIT max_rows
        $$""")
    op.execute("REVOKE ALL ON FUNCTION worldmm_stale_pending_windows(interval, integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION worldmm_stale_pending_windows(interval, integer) TO {app_role}")


def downgrade() -> None:
    _, _, app_role = _dims()
    op.execute("DROP FUNCTION IF EXISTS worldmm_stale_pending_windows(interval, integer)")
    for table in reversed(TENANT_TABLES):
        op.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
    op.execute("DROP TYPE IF EXISTS worldmm_consolidation_event")
    op.execute("DROP TYPE IF EXISTS worldmm_memory_type")
    op.execute("DROP TYPE IF EXISTS worldmm_processing_status")
    op.execute(f"REVOKE ALL ON SCHEMA public FROM {app_role}")
