"""Entity corrections: an append-only record of each rename or merge a user made of their entities.

A correction ("Marko" is "Marco") rewrites `worldmm_entities` (canonical names, and on a merge which canonical
entity the rows point at); this table keeps who corrected which entity into what, and when. The application
role may insert and read rows, and delete them only as forget-me erases a user; never change them.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import context, op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("""
        CREATE TABLE worldmm_entity_corrections (
            id uuid PRIMARY KEY,
            user_id varchar(128) NOT NULL,
            entity_id uuid NOT NULL,
            target_entity_id uuid NOT NULL,
            action varchar(16) NOT NULL CHECK (action IN ('rename', 'merge')),
            old_name varchar(512) NOT NULL,
            new_name varchar(512) NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        )""")
    op.execute("CREATE INDEX ix_entity_corrections_user_time ON worldmm_entity_corrections (user_id, created_at)")
    op.execute("ALTER TABLE worldmm_entity_corrections ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE worldmm_entity_corrections FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON worldmm_entity_corrections "
        "USING (user_id = current_setting('app.user_id', true)) "
        "WITH CHECK (user_id = current_setting('app.user_id', true))"
    )
    op.execute(f"GRANT SELECT, INSERT, DELETE ON worldmm_entity_corrections TO {app_role}")


def downgrade() -> None:
    op.execute("DROP TABLE worldmm_entity_corrections")
