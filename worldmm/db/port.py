"""The port nearly every core function names: the settings and the database (`Services` is one).

Narrower Protocols elsewhere extend it with what else they use; only type-checking imports here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from worldmm.config import Settings
    from worldmm.db.engine import Database


class DatabasePorts(Protocol):
    """The settings and the database."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...
