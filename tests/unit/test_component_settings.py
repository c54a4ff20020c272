"""Each component is given its settings (issue 66): the read side reads a frozen RetrievalSettings, never Settings."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_type_hints

import pytest
from pydantic import ValidationError

from tests.support.harness import make_settings
from worldmm.config import AgentMode, Settings
from worldmm.retrieval.settings import RetrievalSettings

pytestmark = pytest.mark.unit

RETRIEVAL = Path(__file__).resolve().parents[2] / "worldmm" / "retrieval"


def settings_reads(source: str) -> list[str]:
    """Every `<x>.settings` attribute read and every `Settings` name in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "settings":
            found.append(f"line {node.lineno}: .settings")
        if isinstance(node, ast.Name) and node.id == "Settings":
            found.append(f"line {node.lineno}: Settings")
    return found


def test_a_read_of_the_whole_settings_is_found() -> None:
    assert settings_reads("def f(services):\n    return services.settings.hybrid_pool\n") == ["line 2: .settings"]
    assert settings_reads("def f(services):\n    return services.retrieval_settings.hybrid_pool\n") == []


def test_no_retrieval_module_reads_the_whole_settings() -> None:
    reads = {
        path.name: found
        for path in sorted(RETRIEVAL.glob("*.py"))
        if path.name != "settings.py" and (found := settings_reads(path.read_text(encoding="utf-8")))
    }
    assert reads == {}


def test_every_retrieval_setting_has_the_type_settings_gives_it() -> None:
    whole = get_type_hints(Settings)
    for name, field in RetrievalSettings.model_fields.items():
        if name in whole:
            assert field.annotation == whole[name], name
        else:  # a derived value: a property of Settings, typed by its return
            assert get_type_hints(getattr(Settings, name).fget)["return"] == field.annotation, name


def test_retrieval_settings_are_the_settings_values_and_frozen() -> None:
    settings = make_settings(hybrid_top_k=7, agent_mode="plan", episodic_rerank=False)
    part = RetrievalSettings.of(settings)
    assert part.hybrid_top_k == 7 and part.agent_mode_effective == AgentMode.PLAN
    assert part.episodic_rerank_enabled is settings.episodic_rerank_enabled
    with pytest.raises(ValidationError):
        part.hybrid_top_k = 8  # type: ignore[misc]
    with pytest.raises(ValidationError):
        settings.hybrid_top_k = 8  # type: ignore[misc]
