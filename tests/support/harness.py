"""Real services for tests: embedded PostgreSQL, a Redis server, moto AWS; helpers to reset them."""

from __future__ import annotations

import atexit
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from worldmm.config import Settings
from worldmm.db import migrate
from worldmm.db.local import LocalDatabase, start_local_database
from worldmm.db.models import MEMORY_TABLES
from worldmm.db.queries.forget import FORGET_AUDIT_TABLE

TEST_EMBEDDING_DIM = 8
TEST_VISUAL_DIM = 8

# Every test gets its own WORLDMM_HOME (object store, capture counters, gateway key): state written on one
# day by one test never reaches another, nor another run. Session-scoped fixtures share the run's home.
_RUN_HOME = Path(tempfile.mkdtemp(prefix="worldmm-test-home-"))
atexit.register(shutil.rmtree, _RUN_HOME, True)
_test_home: Path | None = None


@contextmanager
def isolated_home(home: Path) -> Iterator[Path]:
    """Settings made by `make_settings` while this is open live under `home`."""
    global _test_home
    previous, _test_home = _test_home, home
    try:
        yield home
    finally:
        _test_home = previous


def make_settings(**overrides: object) -> Settings:
    """Settings for tests: small embedding dimensions, scripted models, no AWS unless asked."""
    base: dict[str, object] = {
        "embedding_dim": TEST_EMBEDDING_DIM,
        "visual_embedding_dim": TEST_VISUAL_DIM,
        "llm_provider": "scripted",
        "embedding_provider": "hash",
        "worldmm_home": _test_home or _RUN_HOME,
        # A deployment-like cursor key, so aws-profile settings start (the built-in one is refused there).
        "cursor_secret": "tests-cursor-signing-key-0123456789abcdef",
    }
    base.update(overrides)
    return Settings(**base)  # type: ignore[arg-type]


def change_settings(holder: Any, **updates: object) -> None:
    """Give `holder` (Services, a CaptureService, ...) settings with `updates`, as a process started with them would
    read them: Settings are frozen, so they are replaced, never changed in place; what Services built from them
    (the component settings) is built again."""
    from worldmm.config import ComponentSettings

    holder.settings = holder.settings.model_copy(update=updates)
    for name, value in list(vars(holder).items()):
        if isinstance(value, ComponentSettings) and name != "settings":
            del holder.__dict__[name]


@contextmanager
def embedded_postgres(settings: Settings) -> Iterator[LocalDatabase]:
    """A fresh embedded server, migrated to head, deleted afterwards."""
    root = Path(tempfile.mkdtemp(prefix="worldmm-pg-"))
    root.chmod(0o755)
    local = start_local_database(root / "pgdata", app_role=settings.database_app_role)
    migrate.upgrade(settings, admin_url=local.admin_url)
    try:
        yield local
    finally:
        local.server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def truncate_all(admin_url: str) -> None:
    """Empty every tenant table (per-test isolation)."""
    engine = create_engine(admin_url)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join((*MEMORY_TABLES, FORGET_AUDIT_TABLE))} RESTART IDENTITY CASCADE"))
    engine.dispose()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def redis_server() -> Iterator[str]:
    """A real redis-server on 127.0.0.1 (no persistence); yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (make setup installs it)")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("redis-server did not start")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
