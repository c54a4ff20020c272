"""template.yaml passes `cfn-lint` and `sam validate --lint` offline (each catches other mistakes)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> str:
    """The tool from the deployment-tools environment scripts/setup.sh makes (.tools/sam), else PATH.

    aws-sam-cli pins versions (click, pydantic) that clash with the application's, so it lives apart.
    """
    local = ROOT / ".tools" / "sam" / "bin" / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed: run scripts/setup.sh"
    return found


def _offline_env() -> dict[str, str]:
    # A region and fake credentials so neither tool looks for a profile; no telemetry, nothing leaves the box.
    return {
        **os.environ,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "SAM_CLI_TELEMETRY": "0",
    }


def test_template_passes_cfn_lint() -> None:
    result = subprocess.run(
        [_tool("cfn-lint"), "template.yaml"],
        cwd=ROOT,
        env=_offline_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_template_passes_sam_validate_lint() -> None:
    result = subprocess.run(
        [_tool("sam"), "validate", "--lint", "--template-file", "template.yaml"],
        cwd=ROOT,
        env=_offline_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr
