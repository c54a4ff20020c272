"""No function reaches PostgreSQL except through `get_database`, which refuses a role
row-level security does not hold (superuser, BYPASSRLS, the tables' owner; test_security_database_role.py).

A new engine or `Database` built anywhere else in the shipped code (the handlers, the library, the GPU worker)
would skip that check: this test names the only places allowed to build one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("handlers", "worldmm", "gpu_worker", "lambda")
ALLOWED = {
    "worldmm/db/engine.py": "get_database: the role check, then the process's Database",
    "worldmm/db/migrate.py": "migrations, as the owner from DATABASE_ADMIN_URL",
    "worldmm/db/migrations/env.py": "Alembic's own entry (the URL migrate hands it)",
    "worldmm/db/local.py": "the embedded server's bootstrap (creates the database as its superuser)",
    "worldmm/cells/move.py": "the operator's move between database cells, as each cell's owner (databaseAdminUrl)",
}


def _builders(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
            if name in {"Database", "create_engine", "create_async_engine"} or (name, owner) == ("connect", "psycopg"):
                found.append(f"{name}@{node.lineno}")
    return found


def test_security_only_get_database_builds_a_database_handle() -> None:
    offenders = {}
    for package in SHIPPED:
        for path in sorted((ROOT / package).rglob("*.py")) if (ROOT / package).is_dir() else []:
            relative = path.relative_to(ROOT).as_posix()
            if relative in ALLOWED:
                continue
            if calls := _builders(path):
                offenders[relative] = calls
    assert offenders == {}, f"build database handles only through worldmm.db.engine.get_database: {offenders}"
