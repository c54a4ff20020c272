"""A window's raw material in the object store: frame keys, the 16-frame sample, and its audio."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from worldmm.media.objects import ObjectStore
from worldmm.media.transcription.port import Transcriber

T = TypeVar("T")

_FRAME_NAME = re.compile(r"frame_[^/]*\.jpe?g$", re.IGNORECASE)


def session_prefix(session_id: str) -> str:
    return f"sessions/{session_id}/"


def window_prefix(session_id: str, window_index: int) -> str:
    """`sessions/{sessionId}/window_{n}/`: where a window's frames and audio chunk live."""
    return f"sessions/{session_id}/window_{window_index}/"


def window_audio_key(session_id: str, window_index: int) -> str:
    return f"{window_prefix(session_id, window_index)}audio.wav"


def legacy_audio_key(session_id: str) -> str:
    """The full-session recording older clients upload once."""
    return f"{session_prefix(session_id)}audio.m4a"


def uniform_sample(items: Sequence[T], k: int) -> list[T]:
    """`k` items spread evenly over `items` (each from the middle of its stretch), in order; all if fewer."""
    n = len(items)
    if k <= 0:
        return []
    if n <= k:
        return list(items)
    return [items[int((i + 0.5) * n / k)] for i in range(k)]


def list_frame_keys(store: ObjectStore, session_id: str, window_index: int) -> list[str]:
    """The window's `frame_*.jpg` keys in capture order."""
    prefix = window_prefix(session_id, window_index)
    return [k for k in store.list(prefix) if "/" not in k[len(prefix) :] and _FRAME_NAME.search(k)]


def list_window_indices(store: ObjectStore, session_id: str) -> list[int]:
    """Every window index that has an object under `sessions/{sessionId}/window_{n}/`."""
    prefix = session_prefix(session_id)
    found: set[int] = set()
    for key in store.list(prefix + "window_"):
        match = re.match(r"window_(\d+)/", key[len(prefix) :])
        if match:
            found.add(int(match.group(1)))
    return sorted(found)


def load_frames(store: ObjectStore, keys: list[str], sample: int) -> tuple[list[bytes], list[str]]:
    """Fetch the uniform `sample` of `keys` (sampled once; the captioner and encoder share it)."""
    chosen = uniform_sample(keys, sample)
    return [store.get(k) for k in chosen], chosen


@dataclass(frozen=True)
class AudioSource:
    """A window's audio: its own `.wav` chunk, or the legacy full-session `.m4a` to be sliced."""

    key: str
    data: bytes
    full_session: bool

    @property
    def filename(self) -> str:
        return self.key.rsplit("/", 1)[-1]


_AUDIO_NAME = re.compile(r"audio\.[0-9a-z]{26}\.wav$")


def find_window_audio(store: ObjectStore, session_id: str, window_index: int) -> AudioSource | None:
    """The window's `.wav` chunk if present (`audio.wav`, else the newest `audio.{nonce}.wav` its upload URLs
    named: the nonce is time-ordered), else the session's legacy `.m4a`, else None."""
    key = window_audio_key(session_id, window_index)
    if store.exists(key):
        return AudioSource(key, store.get(key), full_session=False)
    prefix = window_prefix(session_id, window_index)
    chunks = sorted(k for k in store.list(prefix) if "/" not in k[len(prefix) :] and _AUDIO_NAME.search(k))
    if chunks:
        return AudioSource(chunks[-1], store.get(chunks[-1]), full_session=False)
    legacy = legacy_audio_key(session_id)
    if store.exists(legacy):
        return AudioSource(legacy, store.get(legacy), full_session=True)
    return None


def transcribe_window(
    transcriber: Transcriber, audio: AudioSource, window_index: int, window_seconds: int
) -> str:
    """The window's transcript; a full-session recording is cut to the window's span by segment times."""
    transcript = transcriber.transcribe(audio.data, audio.filename)
    if not audio.full_session:
        return transcript.text.strip()
    start = float(window_index * window_seconds)
    return transcript.window(start, start + window_seconds)
