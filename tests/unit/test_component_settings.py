"""Each component is given its settings (issue 66): the read side, capture, the timeline, ingest, chat, the local
gateway, the GPU worker's discovery and controller, the memory's extraction, summaries and consolidation, and
the allowance read frozen settings of their own, built by the composition root, never the whole Settings."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import get_type_hints

import pytest
from pydantic import ValidationError

from tests.support.harness import make_settings
from worldmm.allowance.settings import AllowanceSettings
from worldmm.capture.settings import CaptureSettings
from worldmm.chat.settings import ChatSettings
from worldmm.config import AgentMode, ComponentSettings, Settings
from worldmm.gateway.settings import GatewaySettings
from worldmm.gpu.settings import GpuClientSettings, GpuSettings
from worldmm.ingest.settings import IngestSettings
from worldmm.media.settings import CaptionSettings
from worldmm.memory.settings import MemorySettings
from worldmm.retrieval.settings import RetrievalSettings
from worldmm.timeline.settings import TimelineSettings

pytestmark = pytest.mark.unit

WORLDMM = Path(__file__).resolve().parents[2] / "worldmm"
COMPONENTS: dict[str, type[ComponentSettings]] = {
    "retrieval": RetrievalSettings,
    "capture": CaptureSettings,
    "timeline": TimelineSettings,
    "ingest": IngestSettings,
    "chat": ChatSettings,
    "gateway": GatewaySettings,
    "gpu": GpuSettings,
    "memory": MemorySettings,
    "allowance": AllowanceSettings,
}
# Folders of a component whose modules are adapters the composition root builds from the whole Settings, as it
# builds the LLM and the transcriber: the text embedders and the visual encoder.
ADAPTER_FOLDERS = {"memory": ("embedding", "visual")}


def whole_settings_reads(source: str) -> list[str]:
    """Every read of the whole Settings in `source`: the name `Settings`, or `<x>.settings` on anything but
    `self` (a component's own object keeps its settings as `self.settings`, typed as its component settings)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        on_self = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
        if isinstance(node, ast.Attribute) and node.attr == "settings" and not on_self:
            found.append(f"line {node.lineno}: .settings")
        if isinstance(node, ast.Name) and node.id == "Settings":
            found.append(f"line {node.lineno}: Settings")
    return found


def test_a_read_of_the_whole_settings_is_found() -> None:
    assert whole_settings_reads("def f(services):\n    return services.settings.hybrid_pool\n") == ["line 2: .settings"]
    assert whole_settings_reads("def f(s: Settings):\n    return 1\n") == ["line 1: Settings"]
    assert whole_settings_reads("def f(services):\n    return services.retrieval_settings.hybrid_pool\n") == []


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_no_module_of_a_component_reads_the_whole_settings(component: str) -> None:
    root = WORLDMM / component
    adapters = ADAPTER_FOLDERS.get(component, ())
    modules = [
        p
        for p in sorted(root.rglob("*.py"))
        if p.name != "settings.py" and p.relative_to(root).parts[0] not in adapters
    ]
    reads = {
        str(p.relative_to(root)): found
        for p in modules
        if (found := whole_settings_reads(p.read_text(encoding="utf-8")))
    }
    assert modules and reads == {}


PARTS = [CaptionSettings, GpuClientSettings]  # the settings of parts a component calls


@pytest.mark.parametrize("component", [*COMPONENTS.values(), *PARTS], ids=lambda c: c.__name__)
def test_every_component_setting_has_the_type_settings_gives_it(component: type[ComponentSettings]) -> None:
    whole = get_type_hints(Settings)
    for name, field in component.model_fields.items():
        derived = getattr(Settings, name, None)
        if isinstance(field.annotation, type) and issubclass(field.annotation, ComponentSettings):
            continue  # the settings of a part the component calls: checked as that part's own
        if name in whole:
            assert field.annotation == whole[name], name
        elif isinstance(derived, property):  # a derived value, typed by the property's return
            assert get_type_hints(derived.fget)["return"] == field.annotation, name
        else:  # a value fetched when first used (a secret): the method itself, called by the component
            returns = get_type_hints(derived)["return"]
            assert field.annotation == Callable[[], returns], name


def test_component_settings_are_the_settings_values_and_frozen() -> None:
    settings = make_settings(hybrid_top_k=7, agent_mode="plan", episodic_rerank=False, capture_expected_frames=4)
    retrieval, capture = RetrievalSettings.of(settings), CaptureSettings.of(settings)
    assert retrieval.hybrid_top_k == 7 and retrieval.agent_mode_effective == AgentMode.PLAN
    assert retrieval.episodic_rerank_enabled is settings.episodic_rerank_enabled
    assert capture.capture_expected_frames == 4 and capture.capture_bytes_per_day == settings.capture_bytes_per_day
    assert TimelineSettings.of(make_settings(cursor_secret="k" * 43)).cursor_signing_secret() == "k" * 43
    ingest = IngestSettings.of(make_settings(caption_frames=2, worldmm_profile="aws"))
    assert ingest.caption == CaptionSettings.of(make_settings(caption_frames=2, worldmm_profile="aws"))
    assert ingest.caption.caption_frames == 2 and ingest.gpu_required
    chat = ChatSettings.of(make_settings(gpu_retries=5, chat_page_max=9))
    assert chat.chat_page_max == 9 and chat.gpu.gpu_retries == 5
    with pytest.raises(ValidationError):
        retrieval.hybrid_top_k = 8  # type: ignore[misc]
    with pytest.raises(ValidationError):
        settings.hybrid_top_k = 8  # type: ignore[misc]


def test_the_composition_root_builds_an_edge_components_settings_once_and_again_when_they_change() -> None:
    from tests.support.harness import change_settings
    from worldmm.services import Services

    services = Services(make_settings(mcp_answer_max_chars=500))
    first = services.settings_of(GatewaySettings)
    assert first.mcp_answer_max_chars == 500 and services.settings_of(GatewaySettings) is first
    change_settings(services, mcp_answer_max_chars=900)
    assert services.settings_of(GatewaySettings).mcp_answer_max_chars == 900
