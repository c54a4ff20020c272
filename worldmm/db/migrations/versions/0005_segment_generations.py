"""Segment generations: a per-user stamp renewed whenever a segment's searchable text or time changes.

The lexical index (BM25 over a user's segments, `worldmm.retrieval.lexical`) is kept per process and
checks this counter with one primary-key read before reusing what it loaded. Statement-level triggers
bump it in the writing transaction, so no write path can forget to; updates that touch neither the
text nor the times (claims, status, errors) leave it alone.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from alembic import context, op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Generations come from one sequence, never reused: a user whose rows were deleted (forget-me) and who
# starts again can never present a generation a process has cached for the old rows.
_BUMP = """
    INSERT INTO worldmm_segment_generations AS g (user_id, generation)
    SELECT u.user_id, nextval('worldmm_segment_generation_seq')
    FROM (SELECT DISTINCT r.user_id FROM {rows} ORDER BY 1) u
    ON CONFLICT (user_id) DO UPDATE SET generation = excluded.generation
"""

_CHANGED = """new_rows r JOIN old_rows o ON o.id = r.id
    WHERE r.search_tsv IS DISTINCT FROM o.search_tsv OR r.start_time IS DISTINCT FROM o.start_time
       OR r.end_time IS DISTINCT FROM o.end_time OR r.caption_embedding IS DISTINCT FROM o.caption_embedding"""


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("CREATE SEQUENCE worldmm_segment_generation_seq")
    op.execute(f"GRANT USAGE ON SEQUENCE worldmm_segment_generation_seq TO {app_role}")
    op.execute("""
        CREATE TABLE worldmm_segment_generations (
            user_id varchar(128) PRIMARY KEY,
            generation bigint NOT NULL
        )""")
    op.execute("ALTER TABLE worldmm_segment_generations ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE worldmm_segment_generations FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON worldmm_segment_generations "
        "USING (user_id = current_setting('app.user_id', true)) "
        "WITH CHECK (user_id = current_setting('app.user_id', true))"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON worldmm_segment_generations TO {app_role}")
    functions = {
        "new": _BUMP.format(rows="new_rows r"),
        "old": _BUMP.format(rows="old_rows r"),
        "changed": _BUMP.format(rows=_CHANGED),
    }
    for name, body in functions.items():
        op.execute(f"""
            CREATE FUNCTION worldmm_bump_segment_generation_{name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                {body};
                RETURN NULL;
            END $$""")
    triggers = (
        ("insert", "INSERT", "NEW TABLE AS new_rows", "new"),
        ("update", "UPDATE", "NEW TABLE AS new_rows OLD TABLE AS old_rows", "changed"),
        ("delete", "DELETE", "OLD TABLE AS old_rows", "old"),
    )
    for event, verb, rows, function in triggers:
        op.execute(
            f"CREATE TRIGGER worldmm_segments_generation_{event} AFTER {verb} ON worldmm_segments "
            f"REFERENCING {rows} FOR EACH STATEMENT EXECUTE FUNCTION worldmm_bump_segment_generation_{function}()"
        )


def downgrade() -> None:
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS worldmm_segments_generation_{event} ON worldmm_segments")
    for name in ("new", "old", "changed"):
        op.execute(f"DROP FUNCTION IF EXISTS worldmm_bump_segment_generation_{name}()")
    op.execute("DROP TABLE IF EXISTS worldmm_segment_generations")
    op.execute("DROP SEQUENCE IF EXISTS worldmm_segment_generation_seq")
