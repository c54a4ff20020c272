"""Every relative link in the README and docs/ lands on a tracked file, and an anchor on one of its headings."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return "".join(c for c in heading.lower() if c.isalnum() or c in " -_").replace(" ", "-")


def _documents() -> list[str]:
    listing = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, check=True, capture_output=True, text=True)
    return [name for name in listing.stdout.split() if name == "README.md" or name.startswith("docs/")]


def test_relative_links_in_the_readme_and_docs_resolve() -> None:
    listing = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True)
    tracked = set(listing.stdout.split())
    broken = []
    for name in _documents():
        document = ROOT / name
        for target in LINK.findall(document.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: outside the repository
            path, _, anchor = target.partition("#")
            landing = (document.parent / path).resolve() if path else document
            relative = landing.relative_to(ROOT).as_posix() if landing.is_relative_to(ROOT) else None
            if relative is None or not (relative in tracked or any(t.startswith(relative + "/") for t in tracked)):
                broken.append(f"{name}: {target} (no such tracked file)")
                continue
            if anchor and landing.suffix == ".md":
                anchors = {_anchor(h) for h in HEADING.findall(landing.read_text())}
                if anchor not in anchors:
                    broken.append(f"{name}: {target} (no heading #{anchor})")
    assert not broken, "\n".join(broken)


def test_anchor_rule_matches_githubs() -> None:
    assert _anchor("Memory quality (EgoLife)") == "memory-quality-egolife"
    assert _anchor("Agent loop with a local 1.5B model") == "agent-loop-with-a-local-15b-model"
    assert _anchor("Evaluation (`worldmm eval`)") == "evaluation-worldmm-eval"
