"""Forget-me: an append-only audit of erasures, and graph generations that are never reused.

`worldmm_forget_audit` keeps one row per erase without personal content: a hash of the user id, who asked,
when, and how many items each store lost. The application role may insert and read rows, never change
or delete them.

Graph generations (0004) counted up from 1 per user, memory type and scale. Forget-me deletes a user's
counters with the rest of their rows; a user of the same id who starts again would count 1, 2, ... again
and could present a generation a warm process still caches for the erased graph. Like segment generations
(0005), every bump now takes the next value of one sequence, which starts above every value handed out so
far, so a generation is never seen twice.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from alembic import context, op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_KEYS_TRIPLES = """
    SELECT t.user_id, t.memory_type,
           CASE WHEN t.memory_type = 'episodic' THEN s.duration_seconds ELSE 0 END AS scale
    FROM {rows} t LEFT JOIN worldmm_segments s ON s.id = t.segment_id
    WHERE t.memory_type = 'semantic' OR s.id IS NOT NULL
    GROUP BY 1, 2, 3
"""

_KEYS_SEGMENTS = """
    SELECT s.user_id, 'episodic'::worldmm_memory_type AS memory_type, s.duration_seconds AS scale
    FROM old_rows s
    GROUP BY 1, 2, 3
"""

_BUMP = """
    INSERT INTO worldmm_graph_generations AS g (user_id, memory_type, scale, generation)
    SELECT k.user_id, k.memory_type, k.scale, nextval('worldmm_graph_generation_seq')
    FROM ({keys} ORDER BY 1, 2, 3) k
    ORDER BY 1, 2, 3
    ON CONFLICT (user_id, memory_type, scale) DO UPDATE SET generation = excluded.generation
"""

# 0004's bodies, restored on downgrade.
_COUNT = """
    INSERT INTO worldmm_graph_generations AS g (user_id, memory_type, scale, generation)
    SELECT k.user_id, k.memory_type, k.scale, 1
    FROM ({keys} ORDER BY 1, 2, 3) k
    ORDER BY 1, 2, 3
    ON CONFLICT (user_id, memory_type, scale) DO UPDATE SET generation = g.generation + 1
"""


def _replace_functions(body: str) -> None:
    functions = {
        "worldmm_bump_graph_generation_new": body.format(keys=_KEYS_TRIPLES.format(rows="new_rows")),
        "worldmm_bump_graph_generation_old": body.format(keys=_KEYS_TRIPLES.format(rows="old_rows")),
        "worldmm_bump_graph_generation_segments": body.format(keys=_KEYS_SEGMENTS),
    }
    for name, sql in functions.items():
        op.execute(f"""
            CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                {sql};
                RETURN NULL;
            END $$""")


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("CREATE SEQUENCE worldmm_graph_generation_seq")
    op.execute(
        "SELECT setval('worldmm_graph_generation_seq', coalesce(max(generation), 0) + 1, false) "
        "FROM worldmm_graph_generations"
    )
    op.execute(f"GRANT USAGE ON SEQUENCE worldmm_graph_generation_seq TO {app_role}")
    _replace_functions(_BUMP)

    op.execute("""
        CREATE TABLE worldmm_forget_audit (
            id bigserial PRIMARY KEY,
            user_hash char(64) NOT NULL,
            requested_by varchar(128) NOT NULL,
            started_at timestamptz NOT NULL,
            finished_at timestamptz NOT NULL,
            complete boolean NOT NULL,
            deleted jsonb NOT NULL,
            error varchar(256)
        )""")
    op.execute("CREATE INDEX ix_forget_audit_user ON worldmm_forget_audit (user_hash, finished_at)")
    op.execute(f"GRANT SELECT, INSERT ON worldmm_forget_audit TO {app_role}")
    op.execute(f"GRANT USAGE ON SEQUENCE worldmm_forget_audit_id_seq TO {app_role}")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS worldmm_forget_audit")
    _replace_functions(_COUNT)
    op.execute("DROP SEQUENCE IF EXISTS worldmm_graph_generation_seq")
