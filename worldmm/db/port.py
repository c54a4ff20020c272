"""The port nearly every core function names: the database (`Services` is one).

Narrower Protocols elsewhere extend it with what else they use (a component's own settings among them); only
type-checking imports here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from worldmm.db.engine import Database


class DatabasePorts(Protocol):
    """The database."""

    @property
    def db(self) -> Database: ...
