"""pgvector columns stored as `halfvec` (2 bytes a dimension) and written in pgvector's binary format.

Every embedding column is `halfvec` (migration 0017): half the bytes of `vector` in the heap, its TOAST and
its HNSW index (`halfvec_cosine_ops`), with recall unchanged on EgoLife and the LoCoMo sample (docs/cost.md).
A query compares a column with `CAST(:embedding AS halfvec)` — `STORED_VECTOR_TYPE` — so the operator is
`halfvec <=> halfvec`, the one the HNSW index serves; a `vector` operand would make the planner cast the
column for every row and never use the index.

`BinaryVector` binds a value as a `pgvector.HalfVector`; psycopg sends it with `HalfVectorBinaryParameter`,
which `register_vector_dumper` installs on each connection as the engine opens it (2 bytes a dimension, with
the type left to the server to infer from the column or cast). Encoding a 1536-d vector as text costs ~0.9 ms
of Python and 30 kB on the wire; in binary, a few µs and 3 kB. The server still checks dimensions and rejects
NaN (and values beyond half precision's ±65504). Reads are unchanged (text, parsed by pgvector).
"""

from __future__ import annotations

from typing import Any

from pgvector import HalfVector, Vector
from pgvector.sqlalchemy import HALFVEC
from psycopg.adapt import Dumper
from psycopg.pq import Format

STORED_VECTOR_TYPE = "halfvec"
"""The SQL type of every stored embedding, and the cast a query's vector needs to use its HNSW index."""

COSINE_OPS = "halfvec_cosine_ops"
"""The HNSW operator class of the stored type."""


class VectorBinaryParameter(Dumper):
    """A `pgvector.Vector` as a binary parameter of unspecified type (oid 0: the server infers `vector`)."""

    format = Format.BINARY
    oid = 0

    def dump(self, obj: Vector) -> bytes:
        return bytes(obj.to_binary())


class HalfVectorBinaryParameter(Dumper):
    """A `pgvector.HalfVector` as a binary parameter of unspecified type (the server infers `halfvec`)."""

    format = Format.BINARY
    oid = 0

    def dump(self, obj: HalfVector) -> bytes:
        return bytes(obj.to_binary())


def register_vector_dumper(connection: Any) -> None:
    """Let one psycopg connection bind `pgvector.Vector` and `HalfVector` (the engine's `connect` event).

    Per connection rather than on `psycopg.adapters`: a connection copies the global adapters when it
    opens, so one opened before a global registration (a pooled connection made by an early query) would
    never learn it, and every later vector write through it would fail.
    """
    connection.adapters.register_dumper(Vector, VectorBinaryParameter)
    connection.adapters.register_dumper(HalfVector, HalfVectorBinaryParameter)


class BinaryVector(HALFVEC):
    """A `halfvec` column whose bound values (lists, numpy arrays) travel in binary, rounded to half precision."""

    cache_ok = True

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: Any) -> HalfVector | None:
            if value is None or isinstance(value, HalfVector):
                return value
            if isinstance(value, Vector):
                value = value.to_list()
            return HalfVector(value)

        return process
