"""Visual retrieval (spec 001 "Visual Query Path"): text → visual encoder → cosine top-k → frame keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.retrieval import MemoryWriter
from worldmm.errors import GpuUnavailableError
from worldmm.media.objects import DirectoryObjectStore
from worldmm.memory.visual.port import UnavailableVisualEncoder
from worldmm.retrieval.visual_retriever import retrieve_visual
from worldmm.services import Services

pytestmark = pytest.mark.integration


class TableEncoder:
    """A visual encoder double mapping known query texts to fixed vectors."""

    model_id = "table"

    def __init__(self, table: dict[str, list[float]], error: Exception | None = None) -> None:
        self.table = table
        self.error = error

    def encode_video(self, frames: list[bytes]) -> list[float]:
        raise AssertionError("not used by retrieval")

    def encode_text(self, text: str) -> list[float]:
        if self.error is not None:
            raise self.error
        return self.table[text]


def _unit(i: int, dim: int = 8) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(dim)]


def test_visual_retriever_returns_nearest_windows_with_frames(services: Services, tmp_path: Path) -> None:
    # GIVEN two windows with visual embeddings; the mug window has frames in the object store
    store = DirectoryObjectStore(tmp_path)
    services.__dict__["store"] = store
    w = MemoryWriter(services, "u1")
    mug = w.segment("A red mug on the desk", session_id="s1", frames_key="sessions/s1/window_1/")
    for n in range(3):
        store.put(f"sessions/s1/window_1/frame_{n:03d}.jpg", b"jpeg")
    store.put("sessions/s1/window_1/audio.wav", b"wav")
    plant = w.segment("A green plant", session_id="s1")
    w.visual(mug, _unit(0))
    w.visual(plant, _unit(1))
    services.__dict__["visual"] = TableEncoder({"red mug": [0.9, 0.1, 0, 0, 0, 0, 0, 0]})
    # WHEN
    result = retrieve_visual(services, "u1", "red mug")
    # THEN the mug window comes first with its frame keys (not the audio)
    assert [m.text for m in result.items] == ["A red mug on the desk", "A green plant"]
    assert result.items[0].frame_keys == [f"sessions/s1/window_1/frame_{n:03d}.jpg" for n in range(3)]
    assert result.items[0].score > result.items[1].score
    assert result.items[1].frame_keys == []


def test_visual_retriever_gpu_unavailable_is_empty_with_a_reason(services: Services) -> None:
    services.__dict__["visual"] = TableEncoder({}, error=GpuUnavailableError("worker stopped", sentinel="gpu-off"))
    result = retrieve_visual(services, "u1", "red mug")
    assert result.items == []
    assert result.reason is not None and "visual encoder unavailable" in result.reason


def test_visual_retriever_without_an_encoder_is_empty_with_a_reason(services: Services) -> None:
    services.__dict__["visual"] = UnavailableVisualEncoder("no GPU worker configured")
    result = retrieve_visual(services, "u1", "red mug")
    assert result.items == []
    assert result.reason == "visual encoder unavailable: no GPU worker configured"


def test_visual_retriever_is_tenant_scoped(services: Services) -> None:
    other = MemoryWriter(services, "u2")
    other.visual(other.segment("someone else's mug"), _unit(0))
    services.__dict__["visual"] = TableEncoder({"mug": _unit(0)})
    result = retrieve_visual(services, "u1", "mug")
    assert result.items == []
