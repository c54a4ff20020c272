"""Graph generations: a per-user, per-(memory type, scale) counter bumped by every triple write.

A process caching a built graph in memory (no Redis) checks this counter with one indexed read before
reusing it, so a warm chat container sees triples another process wrote (spec 001: without Redis,
check a generation stored in the database). Statement-level triggers bump it in the writing
transaction itself, so no code path (inserts, consolidation's invalidation, a retried window's
delete, a cascade) can forget to. Episodic graphs are per scale (the segment's duration); the
semantic graph has scale 0.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from alembic import context, op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_BUMP_TRIPLES = """
    INSERT INTO worldmm_graph_generations AS g (user_id, memory_type, scale, generation)
    SELECT t.user_id, t.memory_type,
           CASE WHEN t.memory_type = 'episodic' THEN s.duration_seconds ELSE 0 END, 1
    FROM {rows} t LEFT JOIN worldmm_segments s ON s.id = t.segment_id
    WHERE t.memory_type = 'semantic' OR s.id IS NOT NULL
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (user_id, memory_type, scale) DO UPDATE SET generation = g.generation + 1
"""

# A deleted segment takes its triples with it (cascade), and those rows can no longer be joined to it.
_BUMP_SEGMENTS = """
    INSERT INTO worldmm_graph_generations AS g (user_id, memory_type, scale, generation)
    SELECT s.user_id, 'episodic'::worldmm_memory_type, s.duration_seconds, 1
    FROM old_rows s
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (user_id, memory_type, scale) DO UPDATE SET generation = g.generation + 1
"""


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("""
        CREATE TABLE worldmm_graph_generations (
            user_id varchar(128) NOT NULL,
            memory_type worldmm_memory_type NOT NULL,
            scale integer NOT NULL,
            generation bigint NOT NULL,
            PRIMARY KEY (user_id, memory_type, scale)
        )""")
    op.execute("ALTER TABLE worldmm_graph_generations ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE worldmm_graph_generations FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON worldmm_graph_generations "
        "USING (user_id = current_setting('app.user_id', true)) "
        "WITH CHECK (user_id = current_setting('app.user_id', true))"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON worldmm_graph_generations TO {app_role}")
    # One function per transition table; the ORDER BY keeps concurrent writers' row locks ordered.
    functions = {
        "worldmm_bump_graph_generation_new": _BUMP_TRIPLES.format(rows="new_rows"),
        "worldmm_bump_graph_generation_old": _BUMP_TRIPLES.format(rows="old_rows"),
        "worldmm_bump_graph_generation_segments": _BUMP_SEGMENTS,
    }
    for name, body in functions.items():
        op.execute(f"""
            CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                {body};
                RETURN NULL;
            END $$""")
    triggers = (
        ("worldmm_triples_bump_insert", "INSERT ON worldmm_triples", "NEW TABLE AS new_rows", "new"),
        ("worldmm_triples_bump_update", "UPDATE ON worldmm_triples", "NEW TABLE AS new_rows", "new"),
        ("worldmm_triples_bump_delete", "DELETE ON worldmm_triples", "OLD TABLE AS old_rows", "old"),
        ("worldmm_segments_bump_delete", "DELETE ON worldmm_segments", "OLD TABLE AS old_rows", "segments"),
    )
    for trigger, event, rows, function in triggers:
        op.execute(
            f"CREATE TRIGGER {trigger} AFTER {event} REFERENCING {rows} FOR EACH STATEMENT "
            f"EXECUTE FUNCTION worldmm_bump_graph_generation_{function}()"
        )


def downgrade() -> None:
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS worldmm_triples_bump_{event} ON worldmm_triples")
    op.execute("DROP TRIGGER IF EXISTS worldmm_segments_bump_delete ON worldmm_segments")
    for name in ("new", "old", "segments"):
        op.execute(f"DROP FUNCTION IF EXISTS worldmm_bump_graph_generation_{name}()")
    op.execute("DROP TABLE IF EXISTS worldmm_graph_generations")
