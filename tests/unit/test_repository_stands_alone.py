"""The repository stands alone: no tracked file reaches for a path outside the checkout.

A clone holds only what git tracks, so a sibling folder (`../shared`), a machine's absolute path or a
`Path(__file__)` climb above the root works only where it was written. Tracked symlinks must land inside.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SYMLINK_MODE = "120000"

OUTSIDE = re.compile(
    r"\.\./shared\b"  # the sibling folder the design and data once lived in
    r"|(?<![\w./-])/(?:work|home|Users)/"  # a development machine's absolute paths
    r"|(?<![\w./-])~/(?:work|shared)\b"
    r"|\bROOT\.parent\b"  # the folder the checkout sits in (ROOT is the repository's root in this code)
)
"""Text that names a place outside the repository."""

CLIMB = re.compile(r"Path\(__file__\)(?:\.resolve\(\))?((?:\.parent(?!s))+)(?:\.parents\[(\d+)\])?|"
                   r"Path\(__file__\)(?:\.resolve\(\))?\.parents\[(\d+)\]")
"""`Path(__file__)` walked up by `.parent` steps or `.parents[n]`."""

DOCUMENT = re.compile(r"(?<![\w/.-])([\w./-]*[\w-]\.md)\b")
"""A Markdown document named in text: it must be one the repository holds."""


def _tracked() -> list[tuple[str, str]]:
    """(mode, path) of every file git tracks here."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("not a git checkout: this test reads what git tracks")
    listing = subprocess.run(
        ["git", "ls-files", "-s", "-z"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    entries = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        entries.append((meta.split()[0], path))
    return entries


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _levels_up(match: re.Match[str]) -> int:
    """How many folders above the file's own folder a `Path(__file__)` climb lands (0: its folder)."""
    parents, index_after, index_alone = match.groups()
    if index_alone is not None:
        return int(index_alone)
    steps = parents.count(".parent") - 1
    return steps + (int(index_after) + 1 if index_after is not None else 0)


def _holds(document: str, folder: Path, documents: set[str], names: set[str]) -> bool:
    """Whether `document` (a bare name, a path from the root or from `folder`) is a tracked Markdown file."""
    if "/" not in document:
        return document in names
    candidates = {document.removeprefix("./"), (folder / document).as_posix()}
    return any(_normal(c) in documents for c in candidates)


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if not parts:
                return "../"  # above the root: never a tracked file
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def test_no_tracked_file_names_a_path_outside_the_repository() -> None:
    # GIVEN every tracked text file but this one (it spells the patterns out)
    here = Path(__file__).resolve().relative_to(ROOT).as_posix()
    tracked = _tracked()
    documents = {name for _, name in tracked if name.endswith(".md")}
    document_names = {Path(name).name for name in documents}
    offenders = []
    for mode, name in tracked:
        path = ROOT / name
        if mode == SYMLINK_MODE or name == here or not path.is_file():
            continue
        text = _text(path)
        if text is None:
            continue
        # WHEN it is searched for outside paths, `Path(__file__)` climbs above the root and documents
        # the repository does not hold
        depth = len(Path(name).parts) - 1  # folders between the root and the file
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
            for climb in CLIMB.finditer(line):
                if _levels_up(climb) > depth:
                    offenders.append(f"{name}:{number}: climbs above the repository: {line.strip()}")
            for document in DOCUMENT.findall(line):
                if not _holds(document, Path(name).parent, documents, document_names):
                    offenders.append(f"{name}:{number}: names {document}, which the repository does not hold")
    # THEN there are none
    assert not offenders, "\n".join(offenders)


def test_tracked_symlinks_point_inside_the_repository() -> None:
    links = [name for mode, name in _tracked() if mode == SYMLINK_MODE]
    outside = [name for name in links if not (ROOT / name).resolve().is_relative_to(ROOT)]
    assert not outside, outside


def test_the_outside_path_checks_catch_what_they_name() -> None:
    # The patterns themselves: each kind of outside path is caught, ordinary text is not.
    for line in ('DESIGN = "../shared/DESIGN.md"', "see /work/shared/spec", "cd /home/alice/src", "~/work/x",
                 'EGOLIFE = ROOT.parent / "shared"'):
        assert OUTSIDE.search(line), line
    for line in ("tests/data/egolife/README.md", "https://example.org/work/", "s3://bucket/work/x", "a/work/b"):
        assert not OUTSIDE.search(line), line
    assert DOCUMENT.findall("the contract is DESIGN.md's table; see docs/architecture.md.") == [
        "DESIGN.md", "docs/architecture.md"
    ]
    assert _holds("../README.md", Path("docs"), {"README.md"}, {"README.md"})
    assert not _holds("../../README.md", Path("docs"), {"README.md"}, {"README.md"})
    # cli.py climbing three folders from worldmm/cli.py lands beside the checkout
    climb = CLIMB.search('Path(__file__).resolve().parents[2] / "shared"')
    assert climb is not None and _levels_up(climb) == 2 > len(Path("worldmm/cli.py").parts) - 1
    climb = CLIMB.search("Path(__file__).resolve().parent.parent")
    assert climb is not None and _levels_up(climb) == 1
