"""Voices: each voice a recording named (the wearer's, and each the wearer called by name), per session, so a
later recording knows the voice again when nobody says the name there (`worldmm.media.transcription.speakers`).

A speaker encoder's vector is biometric data: it is kept per session with the time the recording spans, so
forgetting the session, or any span overlapping that time, erases the voices it gave, and forget-me erases
every row of the user (a tenant table like the memory tables: row-level security on `app.user_id`). The
application role may read, insert and delete rows.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from alembic import context, op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("""
        CREATE TABLE worldmm_voices (
            user_id varchar(128) NOT NULL,
            session_id varchar(128) NOT NULL,
            name varchar(128) NOT NULL,
            vector double precision[] NOT NULL,
            seconds double precision NOT NULL CHECK (seconds > 0),
            recorded_from timestamptz NOT NULL,
            recorded_to timestamptz NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (user_id, session_id, name)
        )""")
    op.execute("ALTER TABLE worldmm_voices ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE worldmm_voices FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON worldmm_voices "
        "USING (user_id = current_setting('app.user_id', true)) "
        "WITH CHECK (user_id = current_setting('app.user_id', true))"
    )
    op.execute(f"GRANT SELECT, INSERT, DELETE ON worldmm_voices TO {app_role}")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS worldmm_voices")
