"""The graph's queries: a user's triples of one memory type as packed edges, and the node-key expressions."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

from worldmm.db.models import MemoryType

# A node key is 16 bytes: the canonical entity's uuid, or a hash of a literal object's lower-cased text.
# The same expression ranks seeds (semantic retriever) and builds graphs, so the two always agree.
LITERAL_KEY_SQL = "substring(sha256(convert_to('literal:' || lower({col}), 'UTF8')) from 1 for 16)"
ENTITY_KEY_SQL = "uuid_send(coalesce({ent}.canonical_entity_id, {ent}.id))"

# One packed bytea of 72 bytes per triple (triple id, segment id, subject key, object key, the segment's
# end time as a big-endian float8 of epoch seconds): a single value to transfer and decode instead of
# hundreds of thousands of rows.
_EDGES_SQL = f"""
SELECT string_agg(
    uuid_send(t.id) || uuid_send(t.segment_id) || {ENTITY_KEY_SQL.format(ent="se")}
    || coalesce({ENTITY_KEY_SQL.format(ent="oe")}, {LITERAL_KEY_SQL.format(col="t.object_literal")})
    || coalesce(float8send(extract(epoch FROM s.end_time)::float8), float8send('NaN'::float8)),
    ''::bytea
) AS packed
FROM worldmm_triples t
JOIN worldmm_entities se ON se.id = t.subject_entity_id
LEFT JOIN worldmm_entities oe ON oe.id = t.object_entity_id
{{join}}
WHERE t.user_id = :user_id AND t.memory_type = :memory_type {{where}}
"""
_EPISODIC_EDGES_SQL = _EDGES_SQL.format(
    join="JOIN worldmm_segments s ON s.id = t.segment_id",
    where="AND s.user_id = :user_id AND s.duration_seconds = :scale",
)
_SEMANTIC_EDGES_SQL = _EDGES_SQL.format(
    join="LEFT JOIN worldmm_segments s ON s.id = t.segment_id", where="AND t.invalidated_at IS NULL"
)

PACKED_EDGE_LAYOUT = [("triple", "S16"), ("segment", "S16"), ("subject", "S16"), ("object", "S16"), ("end_s", ">f8")]
"""The numpy record layout of one packed edge of `packed_edges`."""


def packed_edges(session: Session, user_id: str, memory_type: MemoryType, scale: int | None) -> bytes:
    """Every edge of `user_id`'s graph of this memory type, packed (PACKED_EDGE_LAYOUT); b"" when none.

    Episodic: triples of segments whose duration is `scale`. Semantic: valid (not invalidated) triples.
    """
    sql = _EPISODIC_EDGES_SQL if memory_type == MemoryType.EPISODIC else _SEMANTIC_EDGES_SQL
    params = {"user_id": user_id, "memory_type": memory_type.value, "scale": scale}
    packed = session.execute(text(sql), params).scalar_one()
    return bytes(packed) if packed else b""
