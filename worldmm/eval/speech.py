"""Speech recognition measured on its own: the word error rate of a sample's transcription against its script.

The answer path must not hinge on one CPU's rounding inside the speech model, so the transcriber is judged
apart from the answers: `worldmm eval speech` transcribes a sample recording with the configured transcriber
and reports the word error rate (WER) against the script the recording was spoken from (`script.jsonl`).
"""

from __future__ import annotations

import json
import platform
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from worldmm.media.transcription.port import Transcriber

SCRIPT_FILE = "script.jsonl"
AUDIO_FILE = "audio.m4a"

_NUMBERS = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"),
    *("thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"),
]
_DIGITS = {str(n): word for n, word in enumerate(_NUMBERS)}
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def normalized_words(text: str) -> list[str]:
    """Lower-case words without punctuation; small numbers as words ("9" and "nine" are the same word)."""
    words = _TOKEN.findall(text.casefold().replace("’", "'"))
    return [_DIGITS.get(w, w) for w in words]


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words, by word-level edit distance."""
    ref, hyp = normalized_words(reference), normalized_words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    previous = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, start=1):
        current = [i] + [0] * len(hyp)
        for j, heard in enumerate(hyp, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != heard))
        previous = current
    return previous[-1] / len(ref)


def read_script(sample: Path) -> list[str]:
    """The lines spoken in a sample recording, in order (`script.jsonl`: window, speaker, text)."""
    path = sample / SCRIPT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: regenerate the sample with scripts/make_sample_session.py")
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass(frozen=True)
class SpeechReport:
    """How well a transcriber heard a sample, and where it ran."""

    sample: str
    wer: float
    reference_words: int
    seconds: float
    transcript: str
    machine: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def measure_speech(transcriber: Transcriber, sample: Path) -> SpeechReport:
    """Transcribe `sample`'s recording and score it against its script."""
    reference = " ".join(read_script(sample))
    started = time.perf_counter()
    transcript = transcriber.transcribe((sample / AUDIO_FILE).read_bytes(), AUDIO_FILE)
    seconds = time.perf_counter() - started
    return SpeechReport(
        sample=sample.name,
        wer=round(word_error_rate(reference, transcript.text), 4),
        reference_words=len(normalized_words(reference)),
        seconds=round(seconds, 2),
        transcript=transcript.text,
        machine=platform.processor() or platform.machine(),
    )
