"""pgvector columns written in pgvector's binary format rather than as decimal text.

`BinaryVector` binds a value as a `pgvector.Vector`; psycopg sends it with `VectorBinaryParameter`, which
`register_vector_dumper` installs on each connection as the engine opens it (4 bytes a dimension, with the
type left to the server to infer from the column or cast). Encoding a 1536-d vector as text costs ~0.9 ms
of Python and 30 kB on the wire; in binary, ~0.02 ms and 6 kB. The server still checks dimensions and
rejects NaN. Reads are unchanged (text, parsed by pgvector).
"""

from __future__ import annotations

from typing import Any

from pgvector import Vector
from pgvector.sqlalchemy import VECTOR
from psycopg.adapt import Dumper
from psycopg.pq import Format


class VectorBinaryParameter(Dumper):
    """A `pgvector.Vector` as a binary parameter of unspecified type (oid 0: the server infers `vector`)."""

    format = Format.BINARY
    oid = 0

    def dump(self, obj: Vector) -> bytes:
        return bytes(obj.to_binary())


def register_vector_dumper(connection: Any) -> None:
    """Let one psycopg connection bind `pgvector.Vector` (called by the engine's `connect` event).

    Per connection rather than on `psycopg.adapters`: a connection copies the global adapters when it
    opens, so one opened before a global registration (a pooled connection made by an early query) would
    never learn it, and every later vector write through it would fail.
    """
    connection.adapters.register_dumper(Vector, VectorBinaryParameter)


class BinaryVector(VECTOR):
    """A pgvector column whose bound values (lists, numpy arrays) travel in binary."""

    cache_ok = True

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: Any) -> Vector | None:
            if value is None or isinstance(value, Vector):
                return value
            return Vector(value)

        return process
