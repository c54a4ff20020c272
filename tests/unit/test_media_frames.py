"""Window material: frame listing, the 16-frame sample, audio choice, the captioner's request and parse."""

from __future__ import annotations

import base64

import pytest

from tests.support.harness import make_settings
from tests.support.ingest import StaticTranscriber
from worldmm.errors import ModelOutputError
from worldmm.llm.scripted import ScriptedLLM
from worldmm.media.captioner import caption_window, parse_caption
from worldmm.media.frames import (
    find_window_audio,
    list_frame_keys,
    list_window_indices,
    load_frames,
    transcribe_window,
    uniform_sample,
)
from worldmm.media.objects import DirectoryObjectStore
from worldmm.media.settings import CaptionSettings
from worldmm.media.transcription.port import Transcript, TranscriptSegment

pytestmark = pytest.mark.unit


def test_ingest_frames_uniform_sample_spreads_evenly_and_keeps_order():
    assert uniform_sample(list(range(32)), 16) == list(range(1, 32, 2))
    assert uniform_sample(list(range(100)), 4) == [12, 37, 62, 87]
    assert uniform_sample([1, 2, 3], 16) == [1, 2, 3]
    assert uniform_sample([1, 2, 3], 0) == []


def test_ingest_frames_lists_only_this_windows_frames(tmp_path):
    store = DirectoryObjectStore(tmp_path)
    for key in [
        "sessions/s/window_1/frame_0002.jpg",
        "sessions/s/window_1/frame_0001.jpg",
        "sessions/s/window_1/audio.wav",
        "sessions/s/window_10/frame_0001.jpg",
        "sessions/s/window_1/thumbs/frame_0001.jpg",
    ]:
        store.put(key, b"x")
    assert list_frame_keys(store, "s", 1) == [
        "sessions/s/window_1/frame_0001.jpg",
        "sessions/s/window_1/frame_0002.jpg",
    ]
    assert list_window_indices(store, "s") == [1, 10]


def test_ingest_frames_load_frames_fetches_the_sample_once(tmp_path):
    store = DirectoryObjectStore(tmp_path)
    keys = [f"sessions/s/window_0/frame_{i:04d}.jpg" for i in range(40)]
    for i, key in enumerate(keys):
        store.put(key, bytes([i]))
    frames, chosen = load_frames(store, keys, 16)
    assert len(frames) == 16 and chosen == uniform_sample(keys, 16)
    assert frames[0] == bytes([keys.index(chosen[0])])


def test_ingest_frames_prefers_window_wav_over_legacy_m4a(tmp_path):
    store = DirectoryObjectStore(tmp_path)
    store.put("sessions/s/audio.m4a", b"m4a")
    legacy = find_window_audio(store, "s", 0)
    assert legacy is not None and legacy.full_session is True
    store.put("sessions/s/window_0/audio.wav", b"wav")
    audio = find_window_audio(store, "s", 0)
    assert (
        audio is not None
        and audio.full_session is False
        and audio.data == b"wav"
        and audio.filename == "audio.wav"
    )
    assert find_window_audio(DirectoryObjectStore(tmp_path / "empty"), "s", 0) is None


def test_ingest_frames_legacy_audio_transcript_is_cut_to_the_window(tmp_path):
    store = DirectoryObjectStore(tmp_path)
    store.put("sessions/s/audio.m4a", b"m4a")
    transcriber = StaticTranscriber(
        Transcript(
            "a b c",
            [
                TranscriptSegment(0, 10, "a"),
                TranscriptSegment(29, 35, "b"),
                TranscriptSegment(61, 62, "c"),
            ],
        )
    )
    audio = find_window_audio(store, "s", 1)
    assert audio is not None
    assert transcribe_window(transcriber, audio, 1, 30) == "b"
    assert transcribe_window(transcriber, audio, 2, 30) == "c"


def test_ingest_captioner_prompt_sends_four_frames_as_data_urls_with_transcript():
    llm = ScriptedLLM({"caption": {"caption": "I  pour\n tea."}})
    frames = [bytes([i]) * 3 for i in range(16)]
    caption = caption_window(llm, CaptionSettings.of(make_settings()), frames, "Kate: tea?")
    assert caption.text == "I pour tea."
    content = llm.calls[0].messages[-1]["content"]
    urls = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
    expected = [base64.b64encode(f).decode() for f in uniform_sample(frames, 4)]
    assert [u.removeprefix("data:image/jpeg;base64,") for u in urls] == expected
    assert "Kate: tea?" in llm.calls[0].prompt_text


def test_ingest_captioner_parse_accepts_plain_text_and_rejects_empty():
    assert parse_caption("<think>hmm</think> I walk outside.") == "I walk outside."
    assert parse_caption('```json\n{"caption": "I sit."}\n```') == "I sit."
    with pytest.raises(ModelOutputError):
        parse_caption('{"caption": "  "}')
