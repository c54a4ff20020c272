"""No production function runs over 60 lines (issue 66): a longer one is split into named steps."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 60


def long_functions(root: Path) -> list[str]:
    """`path:line name (n lines)` of every function over MAX_LINES in worldmm/, handlers/ and gpu_worker/
    (migrations aside)."""
    found = []
    for package in ("worldmm", "handlers", "gpu_worker"):
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    if length > MAX_LINES:
                        found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_a_long_function_is_found(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "worldmm").mkdir()
    (tmp_path / "worldmm" / "long.py").write_text(f"def long():\n{body}\n")
    assert long_functions(tmp_path) == [f"worldmm/long.py:1 long ({MAX_LINES + 1} lines)"]


def test_no_production_function_is_over_60_lines() -> None:
    assert long_functions(ROOT) == []
