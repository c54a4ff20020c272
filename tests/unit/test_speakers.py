"""Who said each line: voices grouped, the wearer found, others named only as the wearer addresses them."""

from __future__ import annotations

import numpy as np
import pytest

from worldmm.media.transcription.port import SOMEONE, WEARER, Transcript, TranscriptSegment
from worldmm.media.transcription.speakers import ENOUGH_SPEECH_S, SAMPLE_RATE, addressed, label_speakers

# Five voices as unit vectors far apart; a line's "audio" is the index of its voice, read back by the encoder.
VOICES = np.eye(8, dtype=np.float32)[:5]
WEARER_VOICE, EMMA_VOICE, STRANGER_VOICE, QUIET_VOICE, MARCO_VOICE = range(5)


class VoiceOfLine:
    """A speaker encoder whose samples carry the voice's index (a stand-in for audio)."""

    def embed(self, samples: np.ndarray) -> np.ndarray:
        return VOICES[int(samples[0])]


def _session(lines: list[tuple[int, float, str]]) -> tuple[list[TranscriptSegment], np.ndarray]:
    """Segments one after another, after two minutes of the wearer's talk (enough speech to tell voices
    apart), and samples holding each line's voice."""
    segments, samples, at = [], [], 0.0
    for voice, seconds, text in [(WEARER_VOICE, ENOUGH_SPEECH_S, "I am telling a long story."), *lines]:
        segments.append(TranscriptSegment(at, at + seconds, text))
        samples.append(np.full(int(seconds * SAMPLE_RATE), voice, dtype=np.float32))
        at += seconds
    return segments, np.concatenate(samples)


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("Yes please, Emma. A large cappuccino.", ["Emma"]),
        ("Sure, Marco, when is your presentation?", ["Marco"]),
        ("Yes, and Katrina, you are up early.", ["Katrina"]),
        ("Thank you, Emma.", ["Emma"]),
        ("Hi Emma, did I leave a notebook here?", ["Emma"]),
        ("Marco asks if we can meet at half past nine.", []),
        ("Okay. Great. Wait, where is it?", []),
    ],
)
def test_a_name_addresses_someone_only_as_a_phrase_of_its_own(line: str, names: list[str]) -> None:
    assert addressed(line) == names


def test_the_longest_voice_is_the_wearer_and_a_voice_is_named_as_the_wearer_addresses_it() -> None:
    segments, samples = _session(
        [
            (WEARER_VOICE, 5.0, "I am walking to the cafe."),
            (EMMA_VOICE, 3.0, "Good morning! The usual?"),
            (WEARER_VOICE, 4.0, "Yes please, Emma. A large cappuccino."),
            (EMMA_VOICE, 3.0, "That is four dollars fifty."),
            (STRANGER_VOICE, 3.0, "Excuse me, is this seat free?"),
            (WEARER_VOICE, 4.0, "Yes, it is free."),
            (QUIET_VOICE, 1.0, "Thanks."),
        ]
    )
    speakers = [s.speaker for s in label_speakers(segments, samples, VoiceOfLine())][1:]
    # THEN my lines are mine, Emma's both hers (named by the line that addresses her), the stranger's
    # "someone", and a voice too short to tell is not said to be anyone's
    assert speakers == [WEARER, "Emma", WEARER, "Emma", SOMEONE, WEARER, None]


def test_a_voice_addressed_by_two_names_as_often_is_not_named() -> None:
    segments, samples = _session(
        [
            (WEARER_VOICE, 5.0, "Hi, Emma."),
            (MARCO_VOICE, 3.0, "Hello there, I am not who you think."),
            (WEARER_VOICE, 5.0, "Sorry, Marco."),
            (WEARER_VOICE, 5.0, "I am back at my desk now."),
        ]
    )
    speakers = [s.speaker for s in label_speakers(segments, samples, VoiceOfLine())][1:]
    assert speakers == [WEARER, SOMEONE, WEARER, WEARER]


def test_a_window_alone_is_too_little_speech_to_tell_whose_voice_is_the_wearers() -> None:
    lines = [
        (EMMA_VOICE, 8.0, "Good morning! The usual?"),
        (WEARER_VOICE, 5.0, "Yes please, Emma."),
        (EMMA_VOICE, 9.0, "Sure."),
    ]
    segments = [TranscriptSegment(8.0 * n, 8.0 * n + seconds, text) for n, (_, seconds, text) in enumerate(lines)]
    samples = np.concatenate([np.full(int(8.0 * SAMPLE_RATE), voice, dtype=np.float32) for voice, _, _ in lines])
    assert [s.speaker for s in label_speakers(segments, samples, VoiceOfLine())] == [None, None, None]


def test_a_line_is_kept_after_who_said_it_on_a_line_of_its_own_and_the_words_alone_stay_measurable() -> None:
    transcript = Transcript.of(
        [
            TranscriptSegment(0.0, 4.0, "I always get a cappuccino here.", WEARER),
            TranscriptSegment(4.0, 8.0, "That is four dollars fifty. Have a good day!", "Emma"),
            TranscriptSegment(8.0, 10.0, "Is this seat free?", SOMEONE),
            TranscriptSegment(10.0, 12.0, "Yes.", None),
            TranscriptSegment(31.0, 33.0, "Time to go.", None),
        ]
    )
    assert transcript.window(0, 30) == (
        "I always get a cappuccino here.\nEmma: That is four dollars fifty.\nEmma: Have a good day!\n"
        "Someone: Is this seat free?\nYes."
    )
    assert transcript.window(30, 60) == "Time to go."
    assert transcript.window(0, 30, speakers=False) == (
        "I always get a cappuccino here. That is four dollars fifty. Have a good day! Is this seat free? Yes."
    )
    assert transcript.words.endswith("Is this seat free? Yes. Time to go.")
    # AND a transcript that tells no speakers runs together as it always did
    plain = Transcript.of([TranscriptSegment(0.0, 2.0, "Good morning."), TranscriptSegment(2.0, 4.0, "Hi.")])
    assert plain.text == plain.window(0, 30) == "Good morning. Hi."
