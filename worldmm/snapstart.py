"""SnapStart (the API functions): what init may leave in the snapshot, and what a restored copy renews.

Lambda initialises a published version once, snapshots the process, and resumes any number of copies of that
snapshot. Init opens no connection (the database, Redis and AWS clients are built on the first request), and
the hooks keep it so. Before the snapshot: the libraries a request would import lazily (model SDK, numpy, the
database driver) are imported, so restored copies skip them; every database connection is closed and the
process Services dropped. After a restore each copy reseeds `random` (its state is in the snapshot: every
copy would draw the same numbers, e.g. botocore's retry jitter), gets a new ULID generator (its monotonic
state is in the snapshot too), and again holds no connection from before. `uuid4`, `secrets` and
`os.urandom` read the kernel's entropy on every call, so they are unique in every copy without help.

The hooks are registered with `snapshot_restore_py`, which Lambda's Python runtimes include (PyPI:
snapshot-restore-py); where it is absent (tests, the local profile) registering does nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import random

from aws_lambda_powertools import Logger

logger = Logger(child=True)

_registered = False

PRIMED_MODULES = (
    "sqlalchemy.orm",
    "psycopg",
    "pgvector.psycopg",
    "numpy",
    "scipy.sparse",
    "openai",
    "redis",
    "boto3",
)
"""Imported before the snapshot where the function's package carries them: a request would import them
lazily, after every restore (chat's first request imports ~1,100 modules: openai alone ~550)."""


def prime() -> list[str]:
    """Import the PRIMED_MODULES this package carries (their import holds no connection); returns them."""
    primed = []
    for name in PRIMED_MODULES:
        if importlib.util.find_spec(name.split(".")[0]) is not None:
            importlib.import_module(name)
            primed.append(name)
    return primed


def release_connections() -> None:
    """Close every database connection of this process and forget the process Services (Redis and AWS clients
    with them): the next request builds them afresh."""
    from worldmm.db.engine import close_all_connections
    from worldmm.services import set_services

    close_all_connections()
    set_services(None)


def before_snapshot() -> None:
    """The libraries a request needs go into the snapshot; no connection or lease does."""
    prime()
    release_connections()


def after_restore() -> None:
    """A restored copy draws its own random numbers and ids and opens its own connections."""
    import ulid

    random.seed()  # from os.urandom
    ulid.default_generator = ulid.ULIDGenerator()
    release_connections()
    logger.debug("restored from a SnapStart snapshot: randomness reseeded, connections released")


def register_runtime_hooks() -> bool:
    """Register the hooks with Lambda's runtime (once per process); False where the runtime does not offer them."""
    global _registered
    if _registered:
        return True
    try:
        from snapshot_restore_py import (
            register_after_restore,
            register_before_snapshot,
        )
    except ImportError:
        return False
    register_before_snapshot(before_snapshot)
    register_after_restore(after_restore)
    _registered = True
    return True
