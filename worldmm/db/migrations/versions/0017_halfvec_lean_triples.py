"""A wearer's memory in fewer bytes (issue 63): vectors as `halfvec`, no vector on episodic triples, vector
indexes that no query reads dropped, lz4 for captions and transcripts.

- Every embedding column becomes `halfvec` of the same dimension (2 bytes a dimension instead of 4), and
  the HNSW indexes that queries use are rebuilt on it with `halfvec_cosine_ops` (queries cast their vector
  to `halfvec`: worldmm/db/vector_type.py).
- Episodic triples lose their vector: no query ranks them by cosine (worldmm/memory/episodic/triples.py);
  the vectors of semantic facts are kept.
- `ix_triples_embedding_hnsw` and `ix_visual_embedding_hnsw` are dropped: the semantic retriever,
  consolidation and the visual retriever scan one user's rows exactly (EXPLAIN in
  tests/integration/test_vector_storage.py), so the indexes were only written, never read.
- `ix_segments_search` (GIN over `search_tsv`) is dropped: BM25 reads the column's lexemes per user
  (worldmm/retrieval/lexical.py), no query matches it with `@@`.
- `caption` and `transcript` compress with lz4 where the server has it (new values; metadata only).

In place and resumable, with no lock longer than one batch per table until the swap: per column a `halfvec`
column is added and filled in batches of `MIGRATION_BATCH_ROWS` (Settings) rows by primary key, each batch its
own transaction; then one short transaction per table copies what was written meanwhile, drops the old
column and its index and renames the new one; the kept HNSW index is built `CONCURRENTLY` (an invalid one
left by a killed build is dropped and built again); finally every row is rewritten once more in batches so
that the dropped column's TOAST chunks become dead and `VACUUM` frees them. Killed anywhere
(bench/crash.py's `migration` path kills it at each named step), running it again finishes the job.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from typing import NamedTuple

from alembic import context, op
from sqlalchemy import text
from sqlalchemy.engine import Connection

from worldmm.crashpoints import crash_point

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


class _Column(NamedTuple):
    table: str
    column: str
    keep: str  # rows whose vector is kept (SQL over the table's columns)
    hnsw: str  # the HNSW index on the column, before (dropped) and after (rebuilt when `rebuild`)
    index_where: str  # the partial index's predicate, or ""
    rebuild: bool
    not_null: bool = False


COLUMNS = (
    _Column("worldmm_segments", "caption_embedding", "true", "ix_segments_caption_embedding", "", True),
    _Column(
        "worldmm_entities", "embedding", "true", "ix_entities_embedding_hnsw", "canonical_entity_id IS NULL", True
    ),
    _Column(
        "worldmm_triples", "embedding", "memory_type = 'semantic'", "ix_triples_embedding_hnsw",
        "invalidated_at IS NULL", False,
    ),
    _Column("worldmm_visual_embeddings", "embedding", "true", "ix_visual_embedding_hnsw", "", False, True),
)
COMPRESSED = (("worldmm_segments", "caption"), ("worldmm_segments", "transcript"))


def _batch_rows() -> int:
    return max(1, int(context.config.attributes.get("migration_batch_rows", 2000)))


def _column_type(conn: Connection, table: str, column: str) -> tuple[str, int] | None:
    row = conn.execute(
        text(
            "SELECT t.typname, a.atttypmod FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = CAST(:table AS regclass) AND a.attname = :column AND NOT a.attisdropped"
        ),
        {"table": table, "column": column},
    ).first()
    return (str(row[0]), int(row[1])) if row else None


def _batches(conn: Connection, table: str, statement: str, step: str) -> None:
    """Run `statement` (parameter :ids) over every row of `table` by primary key, a batch per transaction."""
    last = None
    size = _batch_rows()
    while True:
        with conn.begin():
            ids = list(
                conn.execute(
                    text(
                        f"SELECT id FROM {table} WHERE (CAST(:last AS uuid) IS NULL OR id > CAST(:last AS uuid)) "
                        "ORDER BY id LIMIT :n"
                    ),
                    {"last": last, "n": size},
                ).scalars()
            )
            if ids:
                conn.execute(text(statement), {"ids": ids})
        if not ids:
            return
        crash_point(f"migration_0017.{step}")
        last = str(ids[-1])


def _convert(conn: Connection, auto: Connection, c: _Column) -> None:
    """Convert one column; `conn` runs a transaction per step, `auto` what must run outside one."""
    new = f"{c.column}_half"
    current = _column_type(auto, c.table, c.column)
    staged = _column_type(auto, c.table, new)
    if current is None:
        raise RuntimeError(f"{c.table}.{c.column} is missing")
    if current[0] == "vector" or staged is not None:
        dim = current[1] if current[0] == "vector" else (staged[1] if staged else current[1])
        auto.execute(text(f"ALTER TABLE {c.table} ADD COLUMN IF NOT EXISTS {new} halfvec({dim})"))
        copy = f"{new} = CAST({c.column} AS halfvec({dim}))"
        pending = f"{new} IS NULL AND {c.column} IS NOT NULL AND {c.keep}"
        _batches(
            conn, c.table, f"UPDATE {c.table} SET {copy} WHERE id = ANY(:ids) AND {pending}", f"{c.table}.copy"
        )
        # The swap: what was written during the copy, then the new column takes the old one's place.
        with conn.begin():
            conn.execute(text(f"LOCK TABLE {c.table} IN ACCESS EXCLUSIVE MODE"))
            conn.execute(text(f"UPDATE {c.table} SET {copy} WHERE {pending}"))
            conn.execute(text(f"DROP INDEX IF EXISTS {c.hnsw}"))
            conn.execute(text(f"ALTER TABLE {c.table} DROP COLUMN {c.column}"))
            conn.execute(text(f"ALTER TABLE {c.table} RENAME COLUMN {new} TO {c.column}"))
            if c.not_null:
                conn.execute(text(f"ALTER TABLE {c.table} ALTER COLUMN {c.column} SET NOT NULL"))
        crash_point(f"migration_0017.{c.table}.swapped")
        # Rows keep the dropped column's TOAST pointers until rewritten: rewrite each once, then VACUUM.
        _batches(
            conn, c.table, f"UPDATE {c.table} SET {c.column} = {c.column} WHERE id = ANY(:ids)", f"{c.table}.rewrite"
        )
        auto.execute(text(f"VACUUM {c.table}"))
    if c.rebuild:
        valid = auto.execute(
            text("SELECT x.indisvalid FROM pg_index x WHERE x.indexrelid = to_regclass(:name)"), {"name": c.hnsw}
        ).scalar()
        if valid is False:  # a killed CREATE INDEX CONCURRENTLY leaves an invalid index behind
            auto.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {c.hnsw}"))
        where = f" WHERE {c.index_where}" if c.index_where else ""
        auto.execute(
            text(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {c.hnsw} ON {c.table} "
                f"USING hnsw ({c.column} halfvec_cosine_ops){where}"
            )
        )
        crash_point(f"migration_0017.{c.table}.indexed")
    else:
        auto.execute(text(f"DROP INDEX IF EXISTS {c.hnsw}"))


def _has_lz4(conn: Connection) -> bool:
    values = conn.execute(
        text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
    ).scalar()
    return isinstance(values, list) and "lz4" in values


def upgrade() -> None:
    # What came before is committed; the batches commit one by one on connections of their own.
    with op.get_context().autocommit_block():
        engine = op.get_bind().engine
        with engine.connect() as conn, engine.connect() as plain:
            auto = plain.execution_options(isolation_level="AUTOCOMMIT")
            for vectors in COLUMNS:
                _convert(conn, auto, vectors)
            auto.execute(text("DROP INDEX IF EXISTS ix_segments_search"))
            if _has_lz4(auto):
                for table, column in COMPRESSED:
                    auto.execute(text(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION lz4"))


def downgrade() -> None:
    conn = op.get_bind()
    for table, column in COMPRESSED:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION default")
    op.execute("CREATE INDEX IF NOT EXISTS ix_segments_search ON worldmm_segments USING gin (search_tsv)")
    for c in COLUMNS:
        current = _column_type(conn, c.table, c.column)
        if current is None or current[0] != "halfvec":
            continue
        op.execute(f"DROP INDEX IF EXISTS {c.hnsw}")
        op.execute(
            f"ALTER TABLE {c.table} ALTER COLUMN {c.column} TYPE vector({current[1]}) "
            f"USING CAST({c.column} AS vector({current[1]}))"
        )
        where = f" WHERE {c.index_where}" if c.index_where else ""
        op.execute(f"CREATE INDEX {c.hnsw} ON {c.table} USING hnsw ({c.column} vector_cosine_ops){where}")
