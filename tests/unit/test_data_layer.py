"""Issue 66: all SQL lives in one data layer (worldmm/db/); no other module of worldmm/ or handlers/ holds SQL text.

Every string constant of a module is read (the literal parts of an f-string joined with `{}` where the
expressions were), except docstrings and other bare string statements: a docstring may name a statement ("DELETE
/memories" is an HTTP route). SQLAlchemy expressions built in code are not text and are not counted.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("worldmm", "handlers")
DATA_LAYER = ("worldmm/db",)

SQL = re.compile(
    r"\b(?:SELECT\s+.+?\s+FROM\b"  # a query
    r"|SELECT\s+[a-z_][\w.]*\s*\("  # a function called for its effect: SELECT set_config(...), a lock
    r"|INSERT\s+INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b"
    r"|(?:CREATE|DROP|ALTER|TRUNCATE)\s+(?:TEMP\s+|TEMPORARY\s+)?TABLE\b|SET\s+LOCAL\b)",
    re.DOTALL,
)
"""Upper-case SQL keywords in the shape of a statement (English prose rarely writes SELECT ... FROM in capitals)."""


def looks_like_sql(value: str) -> bool:
    """Whether `value` reads as an SQL statement."""
    return SQL.search(value) is not None


def _bare_strings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are statements of their own: docstrings and attribute docstrings."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }


def _strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, text) of every string constant in code; an f-string once, as its literal parts around `{}`."""
    bare = _bare_strings(tree)
    in_fstring: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                in_fstring.add(id(value))
                parts.append(value.value if isinstance(value, ast.Constant) else "{}")
            yield node.lineno, "".join(str(p) for p in parts)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in bare
            and id(node) not in in_fstring
        ):
            yield node.lineno, node.value


def sql_offenders(root: Path, packages: tuple[str, ...] = PACKAGES, exempt: tuple[str, ...] = DATA_LAYER) -> list[str]:
    """`path:line: text` of every SQL string in the modules under `root`/`packages`, outside `exempt` folders."""
    found: list[str] = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if any(relative == e or relative.startswith(e + "/") for e in exempt):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
            for line, value in sorted(_strings(tree)):
                if looks_like_sql(value):
                    snippet = " ".join(value.split())[:80]
                    found.append(f"{relative}:{line}: {snippet}")
    return found


def test_no_module_outside_the_data_layer_holds_sql_text() -> None:
    # GIVEN every module of worldmm/ and handlers/ but the data layer
    # WHEN their string constants are read
    offenders = sql_offenders(ROOT)
    # THEN none holds SQL text: it belongs in a named query of worldmm/db/queries/
    modules = sorted({o.split(":", 1)[0] for o in offenders})
    assert not offenders, (
        f"{len(modules)} module(s) outside worldmm/db/ hold SQL text; move it into worldmm/db/queries/:\n"
        + "\n".join(offenders)
    )


def test_sql_in_code_is_found_and_docstrings_and_the_data_layer_are_not(tmp_path: Path) -> None:
    # GIVEN a package with SQL in code, in an f-string and in a call, a docstring and a route naming DELETE,
    # and a data layer holding SQL
    app = tmp_path / "worldmm" / "retrieval"
    app.mkdir(parents=True)
    (app / "leaky.py").write_text(
        '"""DELETE FROM a docstring, SELECT x FROM y: prose about a query."""\n'
        "from sqlalchemy import text\n"
        "ROUTE = ('DELETE', '/memories')\n"
        "QUERY = text('SELECT id FROM worldmm_segments WHERE user_id = :u')\n"
        "def erase(table: str) -> str:\n"
        '    """Build the statement that does DELETE FROM a table."""\n'
        "    return f'DELETE FROM \"{table}\" WHERE user_id = :u'\n"
        "def lock() -> str:\n"
        "    return 'SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))'\n"
        "def columns(cols: str, table: str) -> str:\n"
        "    return f'SELECT {cols} ' f'FROM {table}'\n",
        encoding="utf-8",
    )
    (app / "clean.py").write_text('"""UPDATE the cache; nothing here is SQL."""\nWORD = "SELECT a model"\n')
    data = tmp_path / "worldmm" / "db" / "queries"
    data.mkdir(parents=True)
    (data / "fine.py").write_text("Q = 'INSERT INTO worldmm_chats (id) VALUES (:i)'\n", encoding="utf-8")
    # WHEN the detector reads it
    offenders = sql_offenders(tmp_path, packages=("worldmm",))
    # THEN exactly the four SQL strings in code are named, with their lines
    assert [o.split(": ", 1)[0] for o in offenders] == [
        "worldmm/retrieval/leaky.py:4",
        "worldmm/retrieval/leaky.py:7",
        "worldmm/retrieval/leaky.py:9",
        "worldmm/retrieval/leaky.py:11",
    ], offenders


@pytest.mark.parametrize(
    ("value", "sql"),
    [
        ("SELECT tokens, updated_at FROM worldmm_allowances WHERE user_id = :u", True),
        ("\nSELECT s.id\n  FROM worldmm_segments s\n", True),
        ("INSERT INTO worldmm_forget_audit (user_hash) VALUES (:h)", True),
        ("UPDATE worldmm_cell_placements SET cell = :t", True),
        ("SELECT set_config('app.user_id', :u, true)", True),
        ("SET LOCAL session_replication_role = replica", True),
        ("CREATE TEMP TABLE worldmm_move_stage AS SELECT 1", True),
        ("DELETE", False),
        ("select id from t", False),
        ("UPDATE / REMOVE / NONE with target ids", False),
        ("summary_merge_unparsable", False),
    ],
)
def test_looks_like_sql(value: str, sql: bool) -> None:
    assert looks_like_sql(value) is sql
