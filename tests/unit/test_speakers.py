"""Who said each line: voices grouped, the wearer found, others named only as the wearer addresses them."""

from __future__ import annotations

import numpy as np
import pytest

from worldmm.media.transcription.port import SOMEONE, WEARER, Transcript, TranscriptSegment, Voice
from worldmm.media.transcription.speakers import ENOUGH_SPEECH_S, SAMPLE_RATE, addressed, label_speakers

# Five voices as unit vectors far apart; a line's "audio" is the index of its voice, read back by the encoder.
_AXES = np.eye(8, dtype=np.float32)
_LIKE_THE_WEARER = (_AXES[0] + 0.54 * _AXES[6]) / np.linalg.norm(_AXES[0] + 0.54 * _AXES[6])  # cosine 0.88
VOICES = np.vstack([_AXES[:5], _LIKE_THE_WEARER])
WEARER_VOICE, EMMA_VOICE, STRANGER_VOICE, QUIET_VOICE, MARCO_VOICE, TOM_VOICE = range(6)
"""Five voices far apart, and Tom's, which sounds like the wearer's."""


class VoiceOfLine:
    """A speaker encoder whose samples carry the voice's index (a stand-in for audio)."""

    def embed(self, samples: np.ndarray) -> np.ndarray:
        return VOICES[int(samples[0])]


def _session(
    lines: list[tuple[int, float, str]], opening: tuple[int, float, str] | None = None
) -> tuple[list[TranscriptSegment], np.ndarray]:
    """Segments one after another, after `opening` (by default two minutes of the wearer's talk: enough speech
    to tell voices apart), and samples holding each line's voice."""
    segments, samples, at = [], [], 0.0
    for voice, seconds, text in [opening or (WEARER_VOICE, ENOUGH_SPEECH_S, "I am telling a long story."), *lines]:
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
    speakers = [s.speaker for s in label_speakers(segments, samples, VoiceOfLine())[0]][1:]
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
    speakers = [s.speaker for s in label_speakers(segments, samples, VoiceOfLine())[0]][1:]
    assert speakers == [WEARER, SOMEONE, WEARER, WEARER]


def test_a_window_alone_is_too_little_speech_to_tell_whose_voice_is_the_wearers() -> None:
    lines = [
        (EMMA_VOICE, 8.0, "Good morning! The usual?"),
        (WEARER_VOICE, 5.0, "Yes please, Emma."),
        (EMMA_VOICE, 9.0, "Sure."),
    ]
    segments = [TranscriptSegment(8.0 * n, 8.0 * n + seconds, text) for n, (_, seconds, text) in enumerate(lines)]
    samples = np.concatenate([np.full(int(8.0 * SAMPLE_RATE), voice, dtype=np.float32) for voice, _, _ in lines])
    assert [s.speaker for s in label_speakers(segments, samples, VoiceOfLine())[0]] == [None, None, None]


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


def _remembered(voice: int, name: str, seconds: float = 30.0) -> Voice:
    return Voice(name, tuple(float(x) for x in VOICES[voice]), seconds)


def test_a_voice_named_in_an_earlier_recording_is_known_again_and_only_this_recordings_names_are_kept() -> None:
    # GIVEN Emma's voice and the wearer's, remembered from the morning, and an evening where nobody says
    # Emma's name, a stranger speaks, and Marco is addressed
    segments, samples = _session(
        [
            (EMMA_VOICE, 4.0, "Hi, I am home. Look at my new bowl!"),
            (WEARER_VOICE, 4.0, "It is beautiful."),
            (STRANGER_VOICE, 3.0, "Excuse me, is this seat free?"),
            (MARCO_VOICE, 3.0, "Slide three is fixed."),
            (WEARER_VOICE, 4.0, "Great work, Marco."),
        ]
    )
    known = [_remembered(EMMA_VOICE, "Emma"), _remembered(WEARER_VOICE, WEARER, 600.0)]
    labelled, voices = label_speakers(segments, samples, VoiceOfLine(), known)
    # THEN Emma's line is hers, the stranger's still someone's, Marco named as he is addressed
    assert [s.speaker for s in labelled][1:] == ["Emma", WEARER, SOMEONE, "Marco", WEARER]
    # AND the voices kept are the wearer's and Marco's, named here; Emma's was only recognised
    assert {v.name: v.vector for v in voices} == {
        WEARER: tuple(VOICES[WEARER_VOICE]),
        "Marco": tuple(VOICES[MARCO_VOICE]),
    }
    assert {v.name: v.seconds for v in voices} == {WEARER: ENOUGH_SPEECH_S + 8.0, "Marco": 3.0}
    # AND without the morning's voices, Emma's line is someone's
    alone, _ = label_speakers(segments, samples, VoiceOfLine())
    assert [s.speaker for s in alone][1:] == [SOMEONE, WEARER, SOMEONE, "Marco", WEARER]


def test_a_remembered_voice_that_is_not_clearly_one_name_is_not_named() -> None:
    # GIVEN two remembered voices both close to Emma's (two people who sound alike), and one far from it
    near = VOICES[EMMA_VOICE] + 0.1 * VOICES[QUIET_VOICE]
    alike = [
        Voice("Emma", tuple(float(x) for x in VOICES[EMMA_VOICE]), 30.0),
        Voice("Sophie", tuple(float(x) for x in near / np.linalg.norm(near)), 30.0),
    ]
    segments, samples = _session([(EMMA_VOICE, 4.0, "Hi, I am home."), (WEARER_VOICE, 4.0, "Welcome back.")])
    labelled, _ = label_speakers(segments, samples, VoiceOfLine(), alike)
    # THEN her line is someone's: a name is not guessed between two voices alike
    assert [s.speaker for s in labelled][1:] == [SOMEONE, WEARER]
    # AND a remembered voice not close enough names nobody
    far = VOICES[EMMA_VOICE] + 0.5 * VOICES[QUIET_VOICE]
    labelled, _ = label_speakers(
        segments, samples, VoiceOfLine(), [Voice("Sophie", tuple(float(x) for x in far / np.linalg.norm(far)), 30.0)]
    )
    assert [s.speaker for s in labelled][1:] == [SOMEONE, WEARER]


def test_the_wearer_is_the_remembered_wearers_voice_even_when_someone_else_talks_longer() -> None:
    # GIVEN a lecture: the speaker talks for minutes, the wearer asks one question
    segments, audio = _session(
        [(WEARER_VOICE, 5.0, "How long did it take to build?"), (STRANGER_VOICE, 6.0, "Eleven years.")],
        opening=(STRANGER_VOICE, ENOUGH_SPEECH_S, "Today we look at the history of the bridge."),
    )
    # THEN with the wearer's remembered voice, the question is the wearer's and the lecture someone's
    labelled, _ = label_speakers(segments, audio, VoiceOfLine(), [_remembered(WEARER_VOICE, WEARER)])
    assert [s.speaker for s in labelled] == [SOMEONE, WEARER, SOMEONE]
    # AND without it the longest voice is taken for the wearer's
    alone, _ = label_speakers(segments, audio, VoiceOfLine())
    assert [s.speaker for s in alone] == [WEARER, SOMEONE, WEARER]


def test_a_line_in_the_wearers_voice_group_that_is_a_remembered_voice_is_that_voices() -> None:
    # GIVEN Tom, whose voice is close enough to the wearer's to be grouped with it, remembered by name
    segments, samples = _session(
        [
            (TOM_VOICE, 3.0, "It comes to nine dollars twenty."),
            (WEARER_VOICE, 4.0, "I am paying with cash today."),
            (TOM_VOICE, 1.0, "Thanks."),
        ]
    )
    alone, _ = label_speakers(segments, samples, VoiceOfLine())
    assert [s.speaker for s in alone][1:] == [WEARER, WEARER, WEARER]
    # THEN knowing his voice, his line is his; a line too short to be sure stays in its group
    known = [_remembered(TOM_VOICE, "Tom"), _remembered(WEARER_VOICE, WEARER, 600.0)]
    labelled, _ = label_speakers(segments, samples, VoiceOfLine(), known)
    assert [s.speaker for s in labelled][1:] == ["Tom", WEARER, WEARER]


def test_a_voice_remembered_by_another_encoder_is_no_voice_to_compare() -> None:
    segments, samples = _session([(EMMA_VOICE, 4.0, "Hi, I am home."), (WEARER_VOICE, 4.0, "Welcome back.")])
    other_encoder = [Voice("Emma", (1.0, 0.0, 0.0), 30.0), _remembered(WEARER_VOICE, WEARER)]
    labelled, _ = label_speakers(segments, samples, VoiceOfLine(), other_encoder)
    assert [s.speaker for s in labelled][1:] == [SOMEONE, WEARER]
