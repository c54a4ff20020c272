"""Database cells (issue 63): the placement map's local table, and each cell's record of users who left it.

- `worldmm_cell_placements` says which cell holds a user (the local profile's placement map; the aws profile
  keeps it in DynamoDB). It lives in every cell's schema, and is read in the first cell's only. Row-level
  security on `app.user_id`: the application role sees and places only the user of its unit of work, and
  may not change a placement (moves are the operator's, as the owner).
- `worldmm_cell_departures` holds, per cell, the users being moved out of it (`moving`) or moved out
  (`moved`). `worldmm_cell_entry(user)`, called by every unit of work on a cell, takes the user's shared
  advisory lock and returns that state: the mover takes the same lock exclusively to fence a user, so no
  unit of work that began before the fence is still writing when the copy starts, and none begun after it
  reads or writes the old copy. The application role may only read departures.

Neither table has a `user_id` column (`placed_user`, `departed_user`): they are the deployment's control
data, not the wearer's memory, so forget-me's sweep and the mover's copy (every `user_id` table) pass them by.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from alembic import context, op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute("""
        CREATE TABLE worldmm_cell_placements (
            placed_user varchar(128) PRIMARY KEY,
            cell varchar(64) NOT NULL,
            moving_to varchar(64),
            updated_at timestamptz NOT NULL DEFAULT now()
        )""")
    op.execute("ALTER TABLE worldmm_cell_placements ENABLE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY placement_of_the_user ON worldmm_cell_placements "
        "USING (placed_user = current_setting('app.user_id', true)) "
        "WITH CHECK (placed_user = current_setting('app.user_id', true))"
    )
    op.execute(f"GRANT SELECT, INSERT ON worldmm_cell_placements TO {app_role}")
    op.execute("""
        CREATE TABLE worldmm_cell_departures (
            departed_user varchar(128) PRIMARY KEY,
            state varchar(16) NOT NULL CHECK (state IN ('moving', 'moved')),
            to_cell varchar(64) NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now()
        )""")
    op.execute(f"GRANT SELECT ON worldmm_cell_departures TO {app_role}")
    # VOLATILE: the SELECT after the lock takes a fresh snapshot, so it sees a fence committed while it waited.
    op.execute("""
        CREATE FUNCTION worldmm_cell_entry(u text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared(hashtextextended('worldmm-cell:' || u, 0));
            RETURN (SELECT state FROM worldmm_cell_departures WHERE departed_user = u);
        END $$""")
    op.execute(f"GRANT EXECUTE ON FUNCTION worldmm_cell_entry(text) TO {app_role}")


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS worldmm_cell_entry(text)")
    op.execute("DROP TABLE IF EXISTS worldmm_cell_departures")
    op.execute("DROP TABLE IF EXISTS worldmm_cell_placements")
