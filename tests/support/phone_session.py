"""The short sample session as a phone would upload it: each window's frames, and its audio as a WAV chunk."""

from __future__ import annotations

import shutil
import wave
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "short-session"
RATE = 16_000
WINDOW_S = 30


def phone_session(out: Path, example: Path = EXAMPLE) -> Path:
    """`out/window_{n}/frame_*.jpg` (the example's) and `out/window_{n}/audio.wav` (its audio.m4a's n-th
    30 s, 16 kHz mono PCM, as the glasses' recorder writes a chunk); returns `out`."""
    from faster_whisper.audio import decode_audio

    samples = decode_audio(str(example / "audio.m4a"), sampling_rate=RATE)
    pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2")
    windows = sorted(p for p in example.iterdir() if p.is_dir() and p.name.startswith("window_"))
    for window in windows:
        index = int(window.name.split("_")[1])
        target = out / window.name
        target.mkdir(parents=True, exist_ok=True)
        for frame in sorted(window.glob("*.jpg")):
            shutil.copyfile(frame, target / frame.name)
        chunk = pcm[index * WINDOW_S * RATE : (index + 1) * WINDOW_S * RATE]
        with wave.open(str(target / "audio.wav"), "wb") as out_wav:
            out_wav.setnchannels(1)
            out_wav.setsampwidth(2)
            out_wav.setframerate(RATE)
            out_wav.writeframes(chunk.tobytes())
    return out
