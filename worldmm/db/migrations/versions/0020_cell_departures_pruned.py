"""Database cells (issue 63): a moved user's record in the cell they left is pruned once nothing needs it, and a
forgotten user's placement goes with them.

- `worldmm_prune_cell_departures(u, keep_s)` (SECURITY DEFINER) deletes `moved` records (of user `u`, or of
  every user when `u` is NULL) older than `keep_s` seconds — never younger than 900 s, Lambda's longest
  run, however it is called: until then a function that resolved the old cell before the switch may still
  open a unit of work there, and the record is what refuses it — and only where the cell holds no row of
  the user (a move killed between the switch and the erase is finished from that record). `moving` records
  are never pruned. The application role may call it (forget-me, the reaper's sweep); it returns how many
  records went, and reads nothing else.
- The application role may delete its own user's row of `worldmm_cell_placements` (row-level security on
  `app.user_id`, migration 0018): forget-me's last step in the local profile.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

from alembic import context, op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

MIN_KEEP_S = 900
"""Lambda's longest run: no invocation that resolved a cell before a switch outlives this (template.yaml)."""


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute(f"""
        CREATE FUNCTION worldmm_prune_cell_departures(u text, keep_s integer) RETURNS integer
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public AS $$
        DECLARE
            departed record;
            held_in record;
            holds boolean;
            pruned integer := 0;
            caller_user text := current_setting('app.user_id', true);
        BEGIN
            FOR departed IN
                SELECT departed_user FROM worldmm_cell_departures
                WHERE state = 'moved' AND (u IS NULL OR departed_user = u)
                  AND updated_at < now() - make_interval(secs => greatest(keep_s, {MIN_KEEP_S}))
                FOR UPDATE SKIP LOCKED
            LOOP
                -- the tenant tables force row-level security on their owner too: look as the departed user
                PERFORM set_config('app.user_id', departed.departed_user, true);
                holds := false;
                FOR held_in IN
                    SELECT c.table_name FROM information_schema.columns c
                    JOIN information_schema.tables t
                      ON t.table_schema = c.table_schema AND t.table_name = c.table_name
                    WHERE c.table_schema = 'public' AND c.column_name = 'user_id' AND t.table_type = 'BASE TABLE'
                LOOP
                    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE user_id = $1)', held_in.table_name)
                        INTO holds USING departed.departed_user;
                    EXIT WHEN holds;
                END LOOP;
                IF NOT holds THEN
                    DELETE FROM worldmm_cell_departures WHERE departed_user = departed.departed_user;
                    pruned := pruned + 1;
                END IF;
            END LOOP;
            PERFORM set_config('app.user_id', coalesce(caller_user, ''), true);
            RETURN pruned;
        END $$""")
    op.execute("REVOKE ALL ON FUNCTION worldmm_prune_cell_departures(text, integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION worldmm_prune_cell_departures(text, integer) TO {app_role}")
    op.execute(f"GRANT DELETE ON worldmm_cell_placements TO {app_role}")


def downgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute(f"REVOKE DELETE ON worldmm_cell_placements FROM {app_role}")
    op.execute("DROP FUNCTION IF EXISTS worldmm_prune_cell_departures(text, integer)")
