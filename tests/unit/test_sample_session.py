"""The sample recordings in examples/ follow spec 000's session layout and stay small."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FRAMES_PER_WINDOW = 16
WINDOW_SECONDS = 30
# (directory, expected window count, size budget in bytes)
SESSIONS = [
    pytest.param("sample-session", range(20, 25), 5 * 1024 * 1024, id="sample"),
    pytest.param("short-session", range(4, 5), 1024 * 1024, id="short"),
    pytest.param("evening-session", range(20, 21), 5 * 1024 * 1024, id="evening"),
    pytest.param("next-morning-session", range(16, 17), 5 * 1024 * 1024, id="next-morning"),
]


def _metadata(name: str) -> dict[str, object]:
    return json.loads((EXAMPLES / name / "metadata.json").read_text())


@dataclass(frozen=True)
class DecodedAudio:
    """The first audio stream of an m4a, decoded to float samples in [-1, 1]."""

    codec: str
    rate: int
    channels: int
    samples: Any  # numpy float64 array

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.rate

    def rms(self, start_s: float, end_s: float) -> float:
        import numpy as np

        part = self.samples[max(0, round(start_s * self.rate)) : round(end_s * self.rate)]
        return float(np.sqrt(np.mean(part**2)))


def _decode_audio(name: str) -> DecodedAudio:
    """Decodes the sample's audio.m4a with PyAV, the decoder faster-whisper uses."""
    import av
    import numpy as np

    with av.open(str(EXAMPLES / name / "audio.m4a")) as container:
        stream = container.streams.audio[0]
        chunks = [frame.to_ndarray().reshape(-1) for frame in container.decode(stream)]
        codec, rate, channels = stream.codec_context.name, stream.rate, stream.channels
    samples = np.concatenate(chunks).astype(np.float64)
    if np.abs(samples).max() > 2.0:  # integer samples: scale to [-1, 1]
        samples /= 32768.0
    return DecodedAudio(codec, rate, channels, samples)


@pytest.mark.parametrize(("name", "windows", "budget"), SESSIONS)
def test_sample_session_metadata_has_spec_fields(name: str, windows: range, budget: int) -> None:
    # GIVEN the committed sample's metadata.json
    metadata = _metadata(name)
    # THEN it carries spec 000's fields with the right types
    assert isinstance(metadata["session_id"], str) and metadata["session_id"]
    assert isinstance(metadata["window_count"], int) and metadata["window_count"] in windows
    assert isinstance(metadata["video_start_ms"], int) and metadata["video_start_ms"] > 1_600_000_000_000
    assert isinstance(metadata["audio_start_ms"], int) and metadata["audio_start_ms"] > 1_600_000_000_000
    created = datetime.fromisoformat(str(metadata["created_at"]))
    assert created.utcoffset() is not None and created.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert int(created.timestamp() * 1000) == metadata["video_start_ms"]
    assert isinstance(metadata.get("user_hint", ""), str)


@pytest.mark.parametrize(("name", "windows", "budget"), SESSIONS)
def test_sample_session_windows_match_window_count_with_sixteen_jpeg_frames(
    name: str, windows: range, budget: int
) -> None:
    from PIL import Image

    # GIVEN the sample's window folders
    root = EXAMPLES / name
    window_count = int(_metadata(name)["window_count"])  # type: ignore[call-overload]
    found = sorted(int(p.name.removeprefix("window_")) for p in root.glob("window_*") if p.is_dir())
    # THEN they are numbered 0..window_count-1, each with 16 decodable small JPEG frames
    assert found == list(range(window_count))
    for index in found:
        frames = sorted(p.name for p in (root / f"window_{index}").iterdir())
        assert frames == [f"frame_{k:04d}.jpg" for k in range(FRAMES_PER_WINDOW)]
        for frame in frames:
            with Image.open(root / f"window_{index}" / frame) as image:
                image.verify()
                assert image.format == "JPEG"
                assert image.size == (320, 240)


@pytest.mark.parametrize(("name", "windows", "budget"), SESSIONS)
def test_sample_session_audio_is_aac_mono_16k_covering_every_window(
    name: str, windows: range, budget: int
) -> None:
    # GIVEN the full-session audio.m4a
    window_count = int(_metadata(name)["window_count"])  # type: ignore[call-overload]
    # WHEN it is decoded with PyAV (what faster-whisper uses)
    audio = _decode_audio(name)
    # THEN it is AAC mono 16 kHz as long as the windows (± a few seconds)
    assert (audio.codec, audio.rate, audio.channels) == ("aac", 16000, 1)
    assert abs(audio.seconds - window_count * WINDOW_SECONDS) <= 3.0
    # AND every window holds speech
    speech = [audio.rms(n * WINDOW_SECONDS, (n + 1) * WINDOW_SECONDS) for n in range(window_count)]
    assert all(level > 0.01 for level in speech), speech


@pytest.mark.parametrize(("name", "windows", "budget"), SESSIONS)
def test_sample_session_speech_never_crosses_a_window_boundary(
    name: str, windows: range, budget: int
) -> None:
    # GIVEN the decoded audio
    window_count = int(_metadata(name)["window_count"])  # type: ignore[call-overload]
    audio = _decode_audio(name)
    # THEN it is silent around every boundary between two windows (each line sits in its scene's window)
    for n in range(1, window_count):
        boundary = n * WINDOW_SECONDS
        assert audio.rms(boundary - 0.4, boundary + 0.4) < 0.002, f"speech across the start of window {n}"


@pytest.mark.parametrize(("name", "windows", "budget"), SESSIONS)
def test_sample_session_fits_its_size_budget(name: str, windows: range, budget: int) -> None:
    # GIVEN every file of the sample
    files = [p for p in (EXAMPLES / name).rglob("*") if p.is_file()]
    # THEN together they stay under the budget, and no frame is large
    assert sum(p.stat().st_size for p in files) < budget
    assert max(p.stat().st_size for p in files if p.suffix == ".jpg") < 20 * 1024


def test_sample_session_readme_names_the_people_places_and_questions() -> None:
    # GIVEN the sample's README
    readme = (EXAMPLES / "sample-session" / "README.md").read_text()
    # THEN it tells who, where, the timeline and what to ask
    for expected in (
        "Katrina",
        "Marco",
        "Emma",
        "Corner Café",
        "Northwind Labs",
        "blue notebook",
        "## Timeline",
    ):
        assert expected in readme
    assert (
        len(re.findall(r"^\| \d+ \|", readme, flags=re.MULTILINE))
        == _metadata("sample-session")["window_count"]
    )
