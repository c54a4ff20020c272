"""docs/app-developers.md stays true to the code: every event field, every error status the document states,
the template parameters and the clients' generators it names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from worldmm.events.models import SessionProcessed, WindowFailed, WindowProcessed
from worldmm.gateway.openapi import openapi_document

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "app-developers.md").read_text()


@pytest.mark.parametrize("model", [WindowProcessed, WindowFailed, SessionProcessed], ids=lambda m: m.__name__)
def test_the_guide_names_every_field_of_each_event(model: type) -> None:
    missing = [name for name in model.model_fields if f"`{name}`" not in GUIDE]
    assert missing == [], f"docs/app-developers.md does not name {missing} of {model.__name__}"


def test_the_guide_lists_every_error_status_the_document_states() -> None:
    statuses = {
        int(code)
        for path in openapi_document()["paths"].values()
        for operation in path.values()
        for code in operation["responses"]
        if int(code) >= 400
    }
    listed = {int(code) for code in re.findall(r"^\| (\d{3}) \|", GUIDE, flags=re.MULTILINE)}
    assert statuses <= listed, sorted(statuses - listed)


def test_the_guide_names_template_parameters_and_generators_that_exist() -> None:
    template = (ROOT / "template.yaml").read_text()
    for parameter in ("JwtIssuer", "JwtAudience", "AppEventsPushTopicArn"):
        assert f"`{parameter}`" in GUIDE and f"\n  {parameter}:" in template
    package = json.loads((ROOT / "clients" / "typescript" / "package.json").read_text())
    assert package["devDependencies"]["openapi-typescript"].startswith("7.13")
    assert package["dependencies"]["openapi-fetch"].startswith("0.17")
    assert "openapi-python-client==0.29.1" in (ROOT / "pyproject.toml").read_text()
