"""Fewer bytes a wearer-hour (issue 63): a hashed key for triples, one triple index less, visual vectors kept in
the row, and published app events pruned after a retention.

- `uq_triple_in_segment` keyed each triple on its lower-cased predicate and object text: the largest index of
  the table (156 kB a wearer-hour of its 500 kB, docs/cost.md). `uq_triple_fact` keys the same fact on
  `md5(predicate, object)` as a uuid (16 bytes), so a triple stays unique per segment, memory type, subject,
  predicate and object as before (`ON CONFLICT DO NOTHING` names no constraint).
- `ix_triples_segment` (segment_id) is dropped: `uq_triple_fact` leads with segment_id and serves the same
  lookups and the cascade from segments.
- Visual vectors (3 kB at 1,536 dimensions, half precision) are stored in the row (`STORAGE MAIN`) rather than as
  two TOAST chunks and their index entries; rows written from now on (no rewrite).
- `worldmm_prune_published_events(keep_s, max_rows)` (SECURITY DEFINER): deletes up to `max_rows` events,
  of every user, published more than `keep_s` seconds ago — never less than `MIN_KEEP_S`, the recovery
  sweep's window (worldmm/ingest/app_events.py) plus a day, however it is called, so the sweep never misses a
  session's window events. Unpublished events are never pruned.

The indexes are built and dropped `CONCURRENTLY`; killed anywhere, running it again finishes (an invalid index
left by a killed build is dropped and built again).

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

from alembic import context, op
from sqlalchemy import text

from worldmm.crashpoints import crash_point

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

MIN_KEEP_S = 8 * 86_400
"""The recovery sweep looks 7 days back for sessions without `SessionProcessed`: keep a day more than that."""

FACT_KEY = (
    "(segment_id, memory_type, subject_entity_id, "
    "(md5(lower(predicate) || chr(31) || coalesce(object_entity_id::text, lower(object_literal)))::uuid))"
)
OLD_KEY = (
    "(segment_id, memory_type, subject_entity_id, lower(predicate), "
    "coalesce(object_entity_id::text, lower(object_literal)))"
)


def upgrade() -> None:
    app_role = str(context.config.attributes["app_role"])
    op.execute(f"""
        CREATE OR REPLACE FUNCTION worldmm_prune_published_events(keep_s integer, max_rows integer)
        RETURNS integer
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public AS $$
            WITH old AS (
                SELECT o.id FROM worldmm_event_outbox o
                WHERE o.published_at IS NOT NULL
                  AND o.published_at < now() - make_interval(secs => greatest(keep_s, {MIN_KEEP_S}))
                ORDER BY o.published_at
                LIMIT max_rows
                FOR UPDATE SKIP LOCKED
            ), pruned AS (
                DELETE FROM worldmm_event_outbox o USING old WHERE o.id = old.id RETURNING 1
            )
            SELECT count(*)::integer FROM pruned
        $$""")
    op.execute("REVOKE ALL ON FUNCTION worldmm_prune_published_events(integer, integer) FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION worldmm_prune_published_events(integer, integer) TO {app_role}")
    op.execute("CREATE INDEX IF NOT EXISTS ix_event_outbox_published ON worldmm_event_outbox (published_at)")
    op.execute("ALTER TABLE worldmm_visual_embeddings ALTER COLUMN embedding SET STORAGE MAIN")
    with op.get_context().autocommit_block():
        auto = op.get_bind()
        valid = auto.execute(
            text("SELECT x.indisvalid FROM pg_index x WHERE x.indexrelid = to_regclass('uq_triple_fact')")
        ).scalar()
        if valid is False:  # a killed CREATE INDEX CONCURRENTLY leaves an invalid index behind
            auto.execute(text("DROP INDEX CONCURRENTLY IF EXISTS uq_triple_fact"))
        auto.execute(
            text(f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS uq_triple_fact ON worldmm_triples {FACT_KEY}")
        )
        crash_point("migration_0021.fact_key_built")
        auto.execute(text("DROP INDEX CONCURRENTLY IF EXISTS uq_triple_in_segment"))
        crash_point("migration_0021.old_key_dropped")
        auto.execute(text("DROP INDEX CONCURRENTLY IF EXISTS ix_triples_segment"))


def downgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_triples_segment ON worldmm_triples (segment_id)")
    op.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS uq_triple_in_segment ON worldmm_triples {OLD_KEY}")
    op.execute("DROP INDEX IF EXISTS uq_triple_fact")
    op.execute("ALTER TABLE worldmm_visual_embeddings ALTER COLUMN embedding SET STORAGE EXTERNAL")
    op.execute("DROP INDEX IF EXISTS ix_event_outbox_published")
    op.execute("DROP FUNCTION IF EXISTS worldmm_prune_published_events(integer, integer)")
