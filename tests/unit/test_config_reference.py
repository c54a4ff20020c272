"""docs/configuration.md is generated from `Settings` and stays true: stale, undescribed or unmarked fails."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from worldmm.config import SECRET_FIELDS, Settings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_config_reference.py"
CREDENTIAL = re.compile(r"(_key|_token|_secret|_password)$|_url$")
"""Field names that suggest a credential; each must be in SECRET_FIELDS or below as a known non-secret."""
NOT_CREDENTIALS = {
    # references to secrets, endpoints and queues: no credential in them
    "model_keys_secret",
    "openai_base_url",
    "groq_base_url",
    "gpu_worker_url",
    "ingest_dlq_url",
    "redis_url",
}


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_config_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass resolves annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_configuration_reference_is_what_the_settings_say() -> None:
    # GIVEN the reference generated from Settings and template.yaml
    rendered = _generator().render()
    # THEN the committed docs/configuration.md is exactly it (regenerate: make config-docs)
    committed = (ROOT / "docs" / "configuration.md").read_text()
    assert committed == rendered, "docs/configuration.md is stale: run `make config-docs`"


def test_every_setting_has_a_description_type_and_group() -> None:
    rows = _generator().settings()
    # THEN each field of Settings has one row, with a description and a named group
    assert [row.env for row in rows] == [name.upper() for name in Settings.model_fields]
    undescribed = [row.env for row in rows if len(row.description.split()) < 3]
    assert not undescribed, f"describe these settings in worldmm/config.py: {undescribed}"
    assert all(row.type and row.group != "other" for row in rows)


def test_settings_that_look_like_credentials_are_marked_secret() -> None:
    # GIVEN every field whose name suggests a key, token, secret or URL with a password
    suspicious = {name for name in Settings.model_fields if CREDENTIAL.search(name)}
    # THEN each is a secret or a known reference, and every secret is a real field
    assert suspicious - NOT_CREDENTIALS <= set(SECRET_FIELDS), suspicious - NOT_CREDENTIALS - set(SECRET_FIELDS)
    assert set(SECRET_FIELDS) <= set(Settings.model_fields)
    secret_rows = {row.env for row in _generator().settings() if row.secret}
    assert secret_rows == {name.upper() for name in SECRET_FIELDS}


def test_check_mode_passes_on_the_committed_file_and_fails_on_a_stale_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # WHEN --check runs against the committed file THEN it passes
    ok = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    # GIVEN the generator pointed at a stale copy
    stale = tmp_path / "configuration.md"
    stale.write_text("# Configuration reference\n")
    module = _generator()
    monkeypatch.setattr(module, "REFERENCE", stale)
    monkeypatch.setattr(sys, "argv", ["gen_config_reference.py", "--check"])
    # WHEN --check runs THEN it exits 1 and leaves the file as it was
    with pytest.raises(SystemExit) as exit_:
        module.main()
    assert exit_.value.code == 1 and stale.read_text() == "# Configuration reference\n"


def test_each_setting_names_the_components_that_read_it() -> None:
    # GIVEN the reference's rows
    rows = {row.env: row for row in _generator().settings()}
    # THEN a setting read by name names its package, one read through a value Settings derives names the
    # package reading that value and `config`, and every field but the keys read by their name is read somewhere
    assert rows["HYBRID_POOL"].read_by == "retrieval"
    assert {"media", "config"} <= set(rows["CAPTION_MODE"].read_by.split(", "))
    assert {r.env for r in rows.values() if r.read_by == "—"} <= {"OPENAI_API_KEY", "GROQ_API_KEY"}
