"""The Python client's generated package, clients/python/worldmm_client, from openapi.json (`make clients`).

openapi-python-client (the version pyproject.toml's dev extra pins) writes the package without post hooks, so
the output depends on the document and the generator alone; `--check` fails when the committed package
differs from a fresh generation. The hand-written layer (`worldmm_kit`) and the packaging are not generated.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "openapi.json"
PACKAGE = "worldmm_client"
COMMITTED = ROOT / "clients" / "python" / PACKAGE


def generate(out: Path, document: Path = DOCUMENT) -> Path:
    """Generate the package into `out` (which must not exist); returns `out`."""
    with tempfile.TemporaryDirectory() as work:
        config = Path(work) / "generator.yaml"
        config.write_text(f"project_name_override: {PACKAGE}\npackage_name_override: {PACKAGE}\npost_hooks: []\n")
        generator = Path(sys.executable).with_name("openapi-python-client")
        done = subprocess.run(
            [str(generator), "generate", "--path", str(document), "--config", str(config), "--meta", "none",
             "--output-path", str(out), "--fail-on-warning"],
            capture_output=True, text=True, timeout=300,
        )
    if done.returncode != 0:
        raise RuntimeError(done.stdout + done.stderr)
    return out


def differences(left: Path, right: Path) -> list[str]:
    """Files that differ, or are only on one side, between two trees (relative paths)."""
    found: list[str] = []

    def walk(cmp: filecmp.dircmp[str], prefix: str) -> None:
        found.extend(prefix + name for name in (*cmp.left_only, *cmp.right_only, *cmp.diff_files, *cmp.funny_files))
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(left, right, ignore=["__pycache__"]), "")
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed package is stale")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        fresh = generate(Path(work) / PACKAGE)
        stale = differences(fresh, COMMITTED) if COMMITTED.exists() else ["(missing)"]
        if args.check:
            if stale:
                print("stale clients/python/worldmm_client (make clients): " + ", ".join(stale))
            return 1 if stale else 0
        if stale:
            shutil.rmtree(COMMITTED, ignore_errors=True)
            shutil.copytree(fresh, COMMITTED)
            print(f"wrote {COMMITTED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
