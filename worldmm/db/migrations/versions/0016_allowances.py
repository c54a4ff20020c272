"""Per-user allowances (issue 64): one token bucket per user for the routes that call models
(`worldmm.allowance.postgres`, the local profile's adapter of the allowance port).

`tokens` is what the bucket held at `updated_at` (epoch seconds); a take refills it to now and spends from
it in one statement. Tenant table like the memory tables: row-level security on `app.user_id`; forget-me's
sweep of every `user_id` table erases it.

And `worldmm_forget_audit` gets row-level security (issue 64): the application role may add an audit row and
read none (it never reads them; operators read them as the owner, whom the policy does not bind).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from alembic import context, op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("""
        CREATE TABLE worldmm_allowances (
            user_id varchar(128) PRIMARY KEY,
            tokens double precision NOT NULL,
            updated_at double precision NOT NULL
        )""")
    op.execute("ALTER TABLE worldmm_allowances ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE worldmm_allowances FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON worldmm_allowances "
        "USING (user_id = current_setting('app.user_id', true)) "
        "WITH CHECK (user_id = current_setting('app.user_id', true))"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON worldmm_allowances TO {app_role}")
    op.execute("ALTER TABLE worldmm_forget_audit ENABLE ROW LEVEL SECURITY")
    op.execute("CREATE POLICY audit_append ON worldmm_forget_audit FOR INSERT WITH CHECK (true)")


def downgrade() -> None:
    op.execute("DROP POLICY IF EXISTS audit_append ON worldmm_forget_audit")
    op.execute("ALTER TABLE worldmm_forget_audit DISABLE ROW LEVEL SECURITY")
    op.execute("DROP TABLE IF EXISTS worldmm_allowances")
