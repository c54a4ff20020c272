"""Telling a fault from an answer: is this exception "the memory store cannot be reached"?

A refused, lost or timed-out connection to PostgreSQL (or to the store that holds its credentials, or
the chat tables) means nothing can be said about the user's memories: chat answers 503 and saves
nothing, instead of "I don't remember that." The check walks the exception's causes and looks only at
modules already imported, so a Lambda that never loaded a database driver pays nothing for it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from worldmm.errors import MemoryUnavailableError


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def _unreachable_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [MemoryUnavailableError]
    sa = sys.modules.get("sqlalchemy.exc")
    if sa is not None:
        # OperationalError: refused, dropped or timed-out connections (and the server going away);
        # InterfaceError: a closed connection; TimeoutError: the pool could not hand one out.
        types += [sa.OperationalError, sa.InterfaceError, sa.TimeoutError]
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None:
        types += [psycopg.OperationalError, psycopg.InterfaceError]
    botocore = sys.modules.get("botocore.exceptions")
    if botocore is not None:  # Secrets Manager (database credentials), DynamoDB (chat tables)
        types += [botocore.EndpointConnectionError, botocore.ConnectTimeoutError, botocore.ReadTimeoutError]
    return tuple(types)


def memory_unreachable(exc: BaseException) -> bool:
    """Whether `exc`, or anything that caused it, is a failure to reach the memory store."""
    types = _unreachable_types()
    for link in _chain(exc):
        if isinstance(link, types):
            return True
        sa = sys.modules.get("sqlalchemy.exc")
        if sa is not None and isinstance(link, sa.DBAPIError) and link.connection_invalidated:
            return True
    return False
