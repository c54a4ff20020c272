"""Database cells' queries: the placement map, departure records, a cell's size, and the mover's statements
that copy, check and erase one user's rows between two PostgreSQL servers (as each cell's owner).

Table and column names in the mover's statements come from the schema itself (`copied_columns`, and
worldmm.db.queries.forget's `user_table_names`, shared with forget-me's erase); the user is always a bound
parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.orm import Session

# --- the placement map (worldmm_cell_placements, migrations 0018, 0020) -------------------------------------


def set_user(session: Session, setting: str, user_id: str) -> None:
    """Set `setting` (row-level security's user, e.g. app.user_id) to `user_id` for the transaction."""
    session.execute(text("SELECT set_config(:k, :v, true)"), {"k": setting, "v": user_id})


def placement(session: Session, user_id: str) -> Row[Any] | None:
    """The user's placement (cell, moving_to), or None."""
    return session.execute(
        text("SELECT cell, moving_to FROM worldmm_cell_placements WHERE placed_user = :u"), {"u": user_id}
    ).one_or_none()


def insert_placement(session: Session, user_id: str, cell: str) -> None:
    """Place the user on `cell` unless a placement of theirs exists."""
    session.execute(
        text(
            "INSERT INTO worldmm_cell_placements (placed_user, cell) VALUES (:u, :c) "
            "ON CONFLICT (placed_user) DO NOTHING"
        ),
        {"u": user_id, "c": cell},
    )


def _changed(session: Session, sql: str, params: dict[str, str]) -> bool:
    return bool(getattr(session.execute(text(sql), params), "rowcount", 0))


def mark_moving(session: Session, user_id: str, source: str, target: str) -> bool:
    """Mark the user on `source` as moving to `target` (again); False when they are elsewhere or moving
    elsewhere."""
    return _changed(
        session,
        "UPDATE worldmm_cell_placements SET moving_to = :t, updated_at = now() WHERE placed_user = :u "
        "AND cell = :s AND (moving_to IS NULL OR moving_to = :t)",
        {"u": user_id, "s": source, "t": target},
    )


def switch_placement(session: Session, user_id: str, source: str, target: str) -> bool:
    """Point the placement of the user moving from `source` to `target` at `target`; False when not moving so."""
    return _changed(
        session,
        "UPDATE worldmm_cell_placements SET cell = :t, updated_at = now() WHERE placed_user = :u "
        "AND ((cell = :s AND moving_to = :t) OR (cell = :t AND moving_to = :t))",
        {"u": user_id, "s": source, "t": target},
    )


def clear_moving(session: Session, user_id: str, target: str) -> bool:
    """Clear the move mark of the user placed on `target`; False when they are not on `target`."""
    return _changed(
        session,
        "UPDATE worldmm_cell_placements SET moving_to = NULL, updated_at = now() WHERE placed_user = :u AND cell = :t",
        {"u": user_id, "t": target},
    )


def delete_settled_placement(session: Session, user_id: str) -> bool:
    """Delete the user's placement unless they are being moved; whether one was deleted."""
    deleted = session.execute(
        text("DELETE FROM worldmm_cell_placements WHERE placed_user = :u AND moving_to IS NULL RETURNING cell"),
        {"u": user_id},
    ).one_or_none()
    return deleted is not None


def placement_exists(session: Session, user_id: str) -> bool:
    """Whether the user has a placement (after `delete_settled_placement`: one being moved)."""
    moving = session.execute(
        text("SELECT moving_to FROM worldmm_cell_placements WHERE placed_user = :u"), {"u": user_id}
    ).one_or_none()
    return moving is not None


# --- a cell ----------------------------------------------------------------------------------------------


def holds_rows_of(session: Session, user_id: str) -> bool:
    """Whether the cell holds segments or chats of the user (as seen under row-level security)."""
    return bool(
        session.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM worldmm_segments WHERE user_id = :u) "
                "OR EXISTS (SELECT 1 FROM worldmm_chats WHERE user_id = :u)"
            ),
            {"u": user_id},
        ).scalar()
    )


def database_size(session: Session) -> int:
    """The bytes the database holds on disk (tables, indexes, TOAST)."""
    return int(session.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


def prune_departures(session: Session, user_id: str | None, keep_s: int) -> int:
    """Delete departure records older than `keep_s` whose user has no row here (`user_id`'s, or None: all);
    the number deleted."""
    return int(
        session.execute(
            text("SELECT worldmm_prune_cell_departures(:u, :keep)"), {"u": user_id, "keep": keep_s}
        ).scalar_one()
    )


# --- departure records (worldmm_cell_departures, migration 0018) -------------------------------------------


def departure_state(session: Session, user_id: str, target: str) -> str | None:
    """The state of the user's departure record towards `target` in this cell, or None."""
    state = session.execute(
        text("SELECT state FROM worldmm_cell_departures WHERE departed_user = :u AND to_cell = :t"),
        {"u": user_id, "t": target},
    ).scalar()
    return None if state is None else str(state)


def fence_departure(session: Session, user_id: str, target: str) -> None:
    """Under the user's exclusive advisory lock (which waits for their open units of work), record them as
    moving to `target`."""
    session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended('worldmm-cell:' || :u, 0))"), {"u": user_id})
    session.execute(
        text(
            "INSERT INTO worldmm_cell_departures (departed_user, state, to_cell) VALUES (:u, 'moving', :t) "
            "ON CONFLICT (departed_user) DO UPDATE SET state = 'moving', to_cell = :t, updated_at = now()"
        ),
        {"u": user_id, "t": target},
    )


def delete_departure(session: Session, user_id: str) -> None:
    """Delete the user's departure record in this cell."""
    session.execute(text("DELETE FROM worldmm_cell_departures WHERE departed_user = :u"), {"u": user_id})


def mark_departed(session: Session, user_id: str) -> None:
    """Mark the user's departure record in this cell `moved`."""
    session.execute(
        text("UPDATE worldmm_cell_departures SET state = 'moved', updated_at = now() WHERE departed_user = :u"),
        {"u": user_id},
    )


# --- the mover's copy ------------------------------------------------------------------------------------


def use_utc(session: Session) -> None:
    """Render times in UTC for the rest of the transaction (the rows' text is compared across cells)."""
    session.execute(text("SET LOCAL TimeZone = 'UTC'"))


def as_replica(session: Session) -> None:
    """Fire no trigger for the rest of the transaction, as in a replica."""
    session.execute(text("SET LOCAL session_replication_role = replica"))


def copied_columns(session: Session, table: str) -> list[str]:
    """The columns a copy carries: not those the target fills itself (serial, identity, generated)."""
    rows = session.execute(
        text(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = :t AND is_generated = 'NEVER' AND is_identity = 'NO' "
            "AND coalesce(column_default, '') NOT LIKE 'nextval(%' ORDER BY ordinal_position"
        ),
        {"t": table},
    ).scalars()
    return list(rows)


def quoted(columns: Sequence[str]) -> str:
    """A column list of quoted identifiers."""
    return ", ".join(f'"{c}"' for c in columns)


def table_checksum(session: Session, table: str, columns: Sequence[str], user_id: str) -> tuple[int, int]:
    """The user's rows of `table` and the sum of their text's MD5 prefixes (order-free) over `columns`."""
    cols = quoted(columns)
    row = session.execute(
        text(
            f"SELECT count(*), coalesce(sum(('x' || substr(md5(CAST(r AS text)), 1, 15))::bit(60)::bigint), 0) "
            f'FROM (SELECT {cols} FROM "{table}" WHERE user_id = :u) r'
        ),
        {"u": user_id},
    ).one()
    return int(row[0]), int(row[1])


def copy_user_rows(src: Session, dst: Session, table: str, columns: Sequence[str], user_id: str) -> tuple[int, int]:
    """Copy the user's rows of `table` from `src`'s cell into `dst`'s (COPY out, COPY into a temporary table,
    insert into the table: row-level security holds); (rows inserted, bytes copied)."""
    cols = quoted(columns)
    reader = src.connection().connection.driver_connection
    writer = dst.connection().connection.driver_connection
    assert reader is not None and writer is not None
    stage = f'CREATE TEMP TABLE worldmm_move_stage ON COMMIT DROP AS SELECT {cols} FROM "{table}"'
    dst.execute(text(f"{stage} WITH NO DATA"))
    select = f'SELECT {cols} FROM "{table}" WHERE user_id = %s'
    copied = 0
    with (
        reader.cursor() as out_cur,
        writer.cursor() as in_cur,
        out_cur.copy(f"COPY ({select}) TO STDOUT", (user_id,)) as out,
        in_cur.copy("COPY worldmm_move_stage FROM STDIN") as into,
    ):
        for block in out:
            copied += len(block)
            into.write(block)
    result = dst.execute(text(f'INSERT INTO "{table}" ({cols}) SELECT {cols} FROM worldmm_move_stage'))
    rows = int(getattr(result, "rowcount", 0) or 0)
    dst.execute(text("DROP TABLE worldmm_move_stage"))
    return rows, copied


def advance_generation_sequence(session: Session, sequence: str, table: str, user_id: str) -> None:
    """Move `sequence` past every generation of the user's rows in `table` (a later one is never a copied one)."""
    session.execute(
        text(
            f"SELECT setval('{sequence}', greatest((SELECT last_value FROM {sequence}), "
            f'(SELECT coalesce(max(generation), 1) FROM "{table}" WHERE user_id = :u)))'
        ),
        {"u": user_id},
    )
