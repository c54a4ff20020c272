"""The reaper's cross-user reads belong to a maintenance role that sees window keys only, not to the owner.

Before: the policy `owner_maintenance_read` let the tables' owner (the role migrations run as, and the owner of
the reaper's SECURITY DEFINER functions) read every user's segments, captions and transcripts included.
After: the three functions the reaper calls (`worldmm_stale_pending_windows`, `worldmm_stale_summary_windows`,
`worldmm_claimed_windows`) belong to `{app_role}_maintenance`, a role that cannot log in, holds SELECT on the
key and status columns of `worldmm_segments` only (no caption, transcript, embedding or metadata), and whose
policy `maintenance_read` is the only one that shows rows across users. The owner is held by row-level
security like everyone else (FORCE ROW LEVEL SECURITY, 0001).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import context, op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

MAINTENANCE_FUNCTIONS = (
    "worldmm_stale_pending_windows(interval, integer)",
    "worldmm_stale_summary_windows(interval, integer)",
    "worldmm_claimed_windows(integer)",
)
MAINTENANCE_COLUMNS = (
    "user_id",
    "session_id",
    "window_index",
    "duration_seconds",
    "frame_count",
    "processing_status",
    "updated_at",
    "claim_token",
    "claim_owner",
)
"""Every column the three functions read, and nothing else of a segment."""


def maintenance_role(app_role: str) -> str:
    """The maintenance role's name beside the application role's."""
    return f"{app_role}_maintenance"


def _give_functions(role: str, new_owner: str) -> None:
    # Giving a function to the role, or taking it back, needs membership in it (a superuser has it). The migrator
    # holds that membership only for this transaction's ALTERs: a member would inherit the role's policy.
    op.execute(f"""
        DO $$ BEGIN
            IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
                EXECUTE format('GRANT %I TO %I', '{role}', current_user);
            END IF;
        END $$""")
    op.execute(f"GRANT CREATE ON SCHEMA public TO {role}")  # a function's new owner must be able to create it
    for function in MAINTENANCE_FUNCTIONS:
        op.execute(f"ALTER FUNCTION {function} OWNER TO {new_owner}")
    op.execute(f"REVOKE CREATE ON SCHEMA public FROM {role}")
    op.execute(f"""
        DO $$ BEGIN
            IF pg_has_role(current_user, '{role}', 'MEMBER')
               AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
                EXECUTE format('REVOKE %I FROM %I', '{role}', current_user);
            END IF;
        END $$""")


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    role = maintenance_role(app_role)
    op.execute(f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                CREATE ROLE {role} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
            END IF;
        END $$""")
    op.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
    op.execute(f"GRANT SELECT ({', '.join(MAINTENANCE_COLUMNS)}) ON worldmm_segments TO {role}")
    op.execute(f"CREATE POLICY maintenance_read ON worldmm_segments FOR SELECT TO {role} USING (true)")
    op.execute("DROP POLICY owner_maintenance_read ON worldmm_segments")
    _give_functions(role, role)


def downgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    role = maintenance_role(app_role)
    _give_functions(role, "CURRENT_USER")
    op.execute("CREATE POLICY owner_maintenance_read ON worldmm_segments FOR SELECT TO CURRENT_USER USING (true)")
    op.execute("DROP POLICY maintenance_read ON worldmm_segments")
    op.execute(f"REVOKE SELECT ({', '.join(MAINTENANCE_COLUMNS)}) ON worldmm_segments FROM {role}")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {role}")
