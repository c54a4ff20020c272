"""Speech recognition measured on its own: the word error rate of a sample's transcription against its script.

The answer path must not hinge on one CPU's rounding inside the speech model, so the transcriber is judged
apart from the answers: `worldmm eval-speech` transcribes a sample recording with the configured transcriber
and reports the word error rate (WER) against the script the recording was spoken from (`script.jsonl`).
"""

from __future__ import annotations

import json
import platform
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from worldmm.media.transcription.port import SOMEONE, WEARER, Transcriber, Transcript, TranscriptSegment, Voice

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
    return _edits(ref, hyp) / len(ref)


def read_script(sample: Path) -> list[str]:
    """The lines spoken in a sample recording, in order (`script.jsonl`: window, speaker, text)."""
    return [text for _window, _speaker, text in _script_lines(sample)]


def _script_lines(sample: Path) -> list[tuple[int, str, str]]:
    path = sample / SCRIPT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: regenerate the sample with scripts/make_sample_session.py")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(int(row["window"]), row.get("speaker", ""), row["text"]) for row in rows]


class ScriptTranscriber:
    """What a recogniser that hears every word would give: a sample's script, each line in its window (the
    lines of a window evenly spaced inside it). It measures the answer path apart from speech recognition
    (`bench_answers --heard script`); it knows only the sample it was made for and ignores the audio."""

    def __init__(self, sample: Path, window_seconds: int = 30, *, speakers: bool = False) -> None:
        self.lines = _script_lines(sample)
        self.window_seconds = window_seconds
        self.speakers = speakers
        """Whether each line carries its speaker as the script names it ("Me": the wearer)."""

    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript:
        segments = []
        for window in sorted({w for w, _, _ in self.lines}):
            said = [(speaker, text) for w, speaker, text in self.lines if w == window]
            step = self.window_seconds / (len(said) + 1)
            for i, (speaker, text) in enumerate(said):
                start = window * self.window_seconds + step * (i + 0.5)
                who = (WEARER if speaker == "Me" else speaker) if self.speakers else None
                segments.append(TranscriptSegment(start, start + step, text, who))
        return Transcript.of(segments)


def _edits(reference: list[str], hypothesis: list[str]) -> int:
    previous = list(range(len(hypothesis) + 1))
    for i, word in enumerate(reference, start=1):
        current = [i] + [0] * len(hypothesis)
        for j, heard in enumerate(hypothesis, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != heard))
        previous = current
    return previous[-1]


def window_error_rate(sample: Path, transcript: Transcript, window_seconds: int) -> float:
    """The word error rate window by window: each window's share of the transcript (`Transcript.window`)
    against the lines spoken in that window. A line heard right but placed in the wrong window counts as
    missed in one window and inserted in the other, so this measures where words land as well as hearing."""
    lines = _script_lines(sample)
    windows = range(max(window for window, _, _ in lines) + 1)
    edits = total = 0
    for n in windows:
        reference = normalized_words(" ".join(text for window, _, text in lines if window == n))
        heard = normalized_words(transcript.window(n * window_seconds, (n + 1) * window_seconds, speakers=False))
        edits += _edits(reference, heard)
        total += len(reference)
    return edits / total if total else 0.0


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b)


def speaker_counts(sample: Path, transcript: Transcript, window_seconds: int) -> dict[str, int]:
    """How the transcript's segments were attributed, against the script line of their window closest in
    words (Jaccard): `right` (the wearer's as the wearer's, another's by their name, give or take one
    letter as it was heard), `someone` (another's, unnamed), `unknown` (not said) and `wrong` (the wearer's as
    another's, or another's as the wearer's or by another name)."""
    lines = _script_lines(sample)
    counts = {"right": 0, "someone": 0, "unknown": 0, "wrong": 0}
    for segment in transcript.segments:
        words = set(normalized_words(segment.text))
        window = int((segment.start_s + segment.end_s) / 2 // window_seconds)
        said = [(_overlap(words, set(normalized_words(text))), speaker) for w, speaker, text in lines if w == window]
        if not words or not said:
            continue
        speaker = max(said)[1]
        truth = WEARER if speaker == "Me" else speaker
        if segment.speaker is None:
            counts["unknown"] += 1
        elif segment.speaker == SOMEONE and truth != WEARER:
            counts["someone"] += 1
        elif segment.speaker == truth or (
            WEARER not in (segment.speaker, truth) and _edits(list(segment.speaker.lower()), list(truth.lower())) <= 1
        ):
            counts["right"] += 1
        else:
            counts["wrong"] += 1
    return counts


@dataclass(frozen=True)
class SpeechReport:
    """How well a transcriber heard a sample, and where it ran."""

    sample: str
    after: list[str]
    """The recordings heard before it, whose named voices it knew."""
    wer: float
    window_wer: float
    """The word error rate window by window (`window_error_rate`): hearing and placing."""
    reference_words: int
    speakers: dict[str, int]
    """Transcript segments by who they were said to be against the script (`speaker_counts`)."""
    seconds: float
    transcript: str
    machine: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def measure_speech(
    transcriber: Transcriber, sample: Path, window_seconds: int = 30, *, after: Sequence[Path] = ()
) -> SpeechReport:
    """Transcribe `sample`'s recording and score it against its script, whole and window by window; `after`:
    recordings heard first, in order, whose named voices it then knows (as ingest knows a user's earlier
    sessions')."""
    known: list[Voice] = []
    for earlier in after:
        known += transcriber.transcribe((earlier / AUDIO_FILE).read_bytes(), AUDIO_FILE, known=known).voices
    reference = " ".join(read_script(sample))
    started = time.perf_counter()
    transcript = transcriber.transcribe((sample / AUDIO_FILE).read_bytes(), AUDIO_FILE, known=known)
    seconds = time.perf_counter() - started
    return SpeechReport(
        sample=sample.name,
        after=[earlier.name for earlier in after],
        wer=round(word_error_rate(reference, transcript.words), 4),
        window_wer=round(window_error_rate(sample, transcript, window_seconds), 4),
        reference_words=len(normalized_words(reference)),
        speakers=speaker_counts(sample, transcript, window_seconds),
        seconds=round(seconds, 2),
        transcript=transcript.text,
        machine=platform.processor() or platform.machine(),
    )
