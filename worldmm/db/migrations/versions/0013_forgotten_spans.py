"""Span forget (issue 25): one row per erase of a time span or a session, which is both its audit record
(who asked, when, how many items each store lost; no content) and its tombstone: a window whose time span
overlaps a row's [span_start, span_end) — or that belongs to the row's session — is refused at claim, so a
window landing after the erase is never brought back.

Tenant table like the memory tables: row-level security on `app.user_id`.

Indexes for the foreign keys a span erase walks back along (without them every deleted segment, triple or
entity costs a scan of the referencing table): triples by subject, object and invalidating segment, entity
aliases by canonical, history by segment and triple, usage by segment.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from alembic import context, op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


_FK_INDEXES = (
    ("ix_triples_subject", "worldmm_triples", "subject_entity_id"),
    ("ix_triples_object", "worldmm_triples", "object_entity_id"),
    ("ix_triples_invalidated_by", "worldmm_triples", "invalidated_by_segment_id"),
    ("ix_entities_alias_of", "worldmm_entities", "canonical_entity_id"),
    ("ix_history_segment", "worldmm_memory_history", "segment_id"),
    ("ix_history_triple", "worldmm_memory_history", "triple_id"),
    ("ix_usage_segment", "worldmm_llm_usage", "segment_id"),
)


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("""
        CREATE TABLE worldmm_forgotten_spans (
            id bigserial PRIMARY KEY,
            user_id varchar(128) NOT NULL,
            session_id varchar(128),
            span_start timestamptz,
            span_end timestamptz,
            requested_by varchar(128) NOT NULL,
            requested_at timestamptz NOT NULL DEFAULT now(),
            finished_at timestamptz,
            complete boolean NOT NULL DEFAULT false,
            deleted jsonb NOT NULL DEFAULT '{}'::jsonb,
            CONSTRAINT ck_forgotten_span_target CHECK (
                (session_id IS NOT NULL) OR (span_start IS NOT NULL AND span_end IS NOT NULL AND span_start < span_end)
            )
        )""")
    op.execute("CREATE INDEX ix_forgotten_spans_user_time ON worldmm_forgotten_spans (user_id, span_start, span_end)")
    op.execute("CREATE INDEX ix_forgotten_spans_user_session ON worldmm_forgotten_spans (user_id, session_id)")
    for name, table, columns in _FK_INDEXES:
        op.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({columns})")
    op.execute("ALTER TABLE worldmm_forgotten_spans ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE worldmm_forgotten_spans FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON worldmm_forgotten_spans "
        "USING (user_id = current_setting('app.user_id', true)) "
        "WITH CHECK (user_id = current_setting('app.user_id', true))"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON worldmm_forgotten_spans TO {app_role}")
    op.execute(f"GRANT USAGE ON SEQUENCE worldmm_forgotten_spans_id_seq TO {app_role}")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS worldmm_forgotten_spans")
    for name, _, _ in _FK_INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {name}")
