"""`worldmm eval` finds its data from `--data` or a setting, and says what is missing without a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from worldmm.cli import EvalDataMissing, eval_data_location, main
from worldmm.config import Settings, get_settings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SLICE = ROOT / "tests" / "data" / "egolife"
SETTINGS = ("EGOLIFE_DATA_DIR", "LOCOMO_DATA_FILE")


@pytest.fixture(autouse=True)
def no_data_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_eval_egolife_without_data_stops_with_exit_2_naming_the_option_and_the_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN no --data and no EGOLIFE_DATA_DIR WHEN the EgoLife evaluation is asked for
    code = main(["eval", "egolife"])
    # THEN it stops before touching a database, naming the option, the setting and where the data comes from
    err = capsys.readouterr().err
    assert code == 2
    for words in ("--data", "EGOLIFE_DATA_DIR", "EgoLife dataset", "tests/data/egolife"):
        assert words in err, words


def test_eval_locomo_without_data_stops_with_exit_2_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "locomo"]) == 2
    err = capsys.readouterr().err
    assert "--data" in err and "LOCOMO_DATA_FILE" in err and "LoCoMo" in err


def test_eval_with_a_folder_that_does_not_exist_names_it_and_where_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a --data folder that is not there
    assert main(["eval", "egolife", "--data", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "nowhere") in err and "(from --data)" in err
    # GIVEN the setting names a folder that is not there
    monkeypatch.setenv("EGOLIFE_DATA_DIR", str(tmp_path / "gone"))
    get_settings.cache_clear()
    assert main(["eval", "egolife"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "gone") in err and "(from EGOLIFE_DATA_DIR)" in err


def test_eval_with_a_folder_lacking_the_files_names_the_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "egolife", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "A1_JAKE_windows30s.jsonl" in err and "EGOLIFE_DATA_DIR" in err
    assert main(["eval", "locomo", "--data", str(tmp_path)]) == 2  # a folder where a file belongs
    assert "LOCOMO_DATA_FILE" in capsys.readouterr().err


def test_data_location_comes_from_the_command_line_before_the_setting(tmp_path: Path) -> None:
    configured = Settings(egolife_data_dir=SLICE, locomo_data_file=ROOT / "tests" / "data" / "locomo_sample.json")
    assert eval_data_location("egolife", None, configured) == SLICE
    assert eval_data_location("egolife", str(tmp_path), configured) == tmp_path
    assert eval_data_location("locomo", None, configured).name == "locomo_sample.json"
    with pytest.raises(EvalDataMissing, match="LOCOMO_DATA_FILE"):
        eval_data_location("locomo", None, Settings())


def test_the_command_line_entry_prints_no_traceback_when_data_is_missing() -> None:
    # The console script as a user runs it: a message and exit code 2, never a traceback.
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "worldmm.cli", "eval", "egolife"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--data" in done.stderr and "EGOLIFE_DATA_DIR" in done.stderr
