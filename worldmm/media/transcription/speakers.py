"""Who said each line: voices told apart by a speaker encoder, the wearer's found, others named by how the
wearer addresses them ("Yes, please, Emma, a large cappuccino.").

A line's speaker is the wearer (`WEARER`), a name the wearer called that voice, `SOMEONE` (a voice that is
clearly not the wearer's and never named), or None when the voice is not clear enough to say — then the
line reads as it did before speakers were told apart. A name is never guessed from a voice alone: it is the
name the wearer called that voice, in this recording or in an earlier one whose named voices were remembered
(`Voice`; the ingest keeps them per session, and forgetting the session forgets them).
"""

from __future__ import annotations

import re
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from worldmm.media.transcription.port import SOMEONE, WEARER, TranscriptSegment, Voice

if TYPE_CHECKING:
    from numpy.typing import NDArray

SAMPLE_RATE = 16_000

SAME_VOICE = 0.15
"""Cosine distance (average linkage) under which two groups of lines are one voice: pure, not complete."""
JOINS = 0.90
"""A small group of lines joins the wearer's or a named voice when its centroid is this close (cosine)."""
NOT_WEARER = 0.80
"""A group further than this from the wearer's voice (cosine) is someone else's, named or not."""
SURE_SECONDS = 2.5
"""A shorter line's voice is too uncertain to call it someone else's on its own."""
ENOUGH_SPEECH_S = 120.0
"""Less speech than this (a 30-second window's chunk alone) is too little to tell which voice is the wearer's:
its lines keep no speaker."""
TURN_GAP_S = 8.0
"""A line addressing someone by name names the voice just before or after it within this many seconds."""
RECOGNISED = 0.95
"""A voice is one remembered from an earlier recording when its centroid is this close (cosine). Measured on
the sample recordings (espeak-ng voices, far closer to each other than people's): the evening's unnamed voice
0.979 to the morning's Katrina, its own; a voice named in the evening 0.943 to the morning's Emma, another."""
MARGIN = 0.05
"""… and closer to that remembered voice than to any other by this much: two alike are not told apart."""


class VoiceEncoder(Protocol):
    """A speaker encoder: 16 kHz mono samples → a unit vector, close for the same voice."""

    def embed(self, samples: NDArray[np.float32]) -> NDArray[np.float32]: ...


class ResemblyzerVoiceEncoder:
    """Resemblyzer's GE2E encoder; its weights ship inside the `resemblyzer` wheel. Loaded on first use."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def embed(self, samples: NDArray[np.float32]) -> NDArray[np.float32]:
        with self._lock:
            if self._model is None:
                from resemblyzer import VoiceEncoder as GE2E

                self._model = GE2E("cpu", verbose=False)
            return np.asarray(self._model.embed_utterance(samples), dtype=np.float32)


_OPENERS = re.compile(
    r"^(?:and|hi|hey|hello|thanks|thank you|bye|goodbye|yes|yes please|please|sure|okay|ok|sorry|"
    r"good morning|morning|good night|see you)\s+",
    re.I,
)
_NAME = re.compile(r"[A-Z][a-z]+")
_NOT_A_NAME = frozenset(
    re.findall(
        r"\w+",
        "I Yes No Okay Ok Sure Right Great Wait Thanks Thank Hi Hey Hello Oh Now Then So And Please Good "
        "Morning Time Bye Well Yeah Fine Cool Sorry Night Today Tomorrow Tonight",
    )
)


def addressed(text: str) -> list[str]:
    """The names a line addresses someone by: a phrase of its own between commas ("Sure, Marco, when ...",
    "Thank you, Emma.", "Yes, and Katrina, you are ...")."""
    names = []
    for phrase in re.split(r"[,.!?;]", text):
        word = _OPENERS.sub("", phrase.strip())
        if _NAME.fullmatch(word) and word not in _NOT_A_NAME:
            names.append(word)
    return names


def label_speakers(
    segments: Sequence[TranscriptSegment],
    samples: NDArray[np.float32],
    encoder: VoiceEncoder,
    known: Sequence[Voice] = (),
) -> tuple[list[TranscriptSegment], list[Voice]]:
    """`segments` with their speakers, from the voices in `samples` (16 kHz, the transcript's clock), and the
    voices this recording named (the wearer's and each addressed one), to be known again later.

    Lines are grouped by voice (average-linkage clustering, kept strict); the wearer is the voice that
    matches the wearer's remembered voice (`known`), else the one that speaks longest (in `ENOUGH_SPEECH_S`
    of speech at least, else no line gets a speaker); a voice is named when the wearer's lines next to its
    lines address one name more than half the time, or else when it is a remembered voice (`RECOGNISED`). A
    small group joins the closest of those voices when it is close; else it is `SOMEONE` when it is far from
    the wearer's voice and long enough to tell, and None otherwise. A line long enough to tell, grouped with
    the wearer's voice, is a remembered voice's when its own voice is recognised as that one.
    """
    spans = [(int(s.start_s * SAMPLE_RATE), int(s.end_s * SAMPLE_RATE)) for s in segments]
    usable = [i for i, (a, b) in enumerate(spans) if b > a and a < len(samples)]
    seconds = np.array([segments[i].end_s - segments[i].start_s for i in usable])
    if len(usable) < 2 or seconds.sum() < ENOUGH_SPEECH_S:
        return list(segments), []
    heard = _group_voices(samples, encoder, [spans[i] for i in usable], seconds)
    remembered = _remembered(known, heard.vectors.shape[1])
    own = {int(group): heard.centroid({int(group)}) for group in set(heard.groups)}
    talk: dict[int, float] = defaultdict(float)
    for group, length in zip(heard.groups, seconds, strict=True):
        talk[int(group)] += float(length)
    names, addressed_groups = _group_names(segments, usable, heard, own, talk, remembered)
    voices: dict[str, set[int]] = defaultdict(set)
    for group, name in names.items():
        voices[name].add(group)
    speaker_of = _group_speakers(heard, own, names, voices)
    labelled = list(segments)
    for n, (i, group) in enumerate(zip(usable, heard.groups, strict=True)):
        speaker = speaker_of[int(group)]
        if speaker == WEARER and seconds[n] >= SURE_SECONDS:
            # one line of another voice can sit in the wearer's group (average linkage over many lines)
            speaker = _recognised(heard.vectors[n], remembered) or speaker
        labelled[i] = replace(segments[i], speaker=speaker)
    heard_named = {name: members & addressed_groups for name, members in voices.items()}
    named = [
        Voice(name, tuple(float(x) for x in heard.centroid(members)), sum(talk[g] for g in members))
        for name, members in heard_named.items()
        if members
    ]
    return labelled, named


@dataclass(frozen=True)
class _HeardVoices:
    """The usable lines' voices: unit vectors, seconds spoken, and the voice group each line falls in."""

    vectors: NDArray[np.float64]
    seconds: NDArray[np.float64]
    groups: NDArray[Any]

    def centroid(self, members: set[int]) -> NDArray[np.float64]:
        """The unit mean voice of these groups' lines, weighted by their seconds."""
        mask = np.isin(self.groups, list(members))
        total = (self.vectors[mask] * self.seconds[mask, None]).sum(axis=0)
        return np.asarray(total / np.linalg.norm(total))

    def long_enough(self, group: int) -> bool:
        """Whether one of the group's lines is long enough (`SURE_SECONDS`) to tell its voice."""
        return float(self.seconds[self.groups == group].max()) >= SURE_SECONDS


def _group_voices(
    samples: NDArray[np.float32], encoder: VoiceEncoder, spans: list[tuple[int, int]], seconds: NDArray[np.float64]
) -> _HeardVoices:
    """Each span's voice vector, grouped by voice (average-linkage clustering, kept strict: `SAME_VOICE`)."""
    from scipy.cluster.hierarchy import fcluster, linkage

    vectors = np.array([encoder.embed(samples[a:b]) for a, b in spans], dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    groups = fcluster(linkage(vectors, method="average", metric="cosine"), SAME_VOICE, criterion="distance")
    return _HeardVoices(vectors, seconds, groups)


def _group_names(
    segments: Sequence[TranscriptSegment],
    usable: list[int],
    heard: _HeardVoices,
    own: dict[int, NDArray[np.float64]],
    talk: dict[int, float],
    remembered: dict[str, NDArray[np.float64]],
) -> tuple[dict[int, str], set[int]]:
    """Voice group → name: the wearer's, the addressed ones, then the remembered voices recognised (long enough
    to tell); and the groups named in this recording (the wearer's and the addressed)."""
    wearer = _wearer(own, talk, remembered)
    names = _names(segments, usable, heard.groups, wearer)
    names[wearer] = WEARER
    addressed_groups = set(names)
    for group in set(own) - set(names):
        if heard.long_enough(group) and (name := _recognised(own[group], remembered)):
            names[group] = name
    return names, addressed_groups


def _group_speakers(
    heard: _HeardVoices,
    own: dict[int, NDArray[np.float64]],
    names: dict[int, str],
    voices: dict[str, set[int]],
) -> dict[int, str | None]:
    """Every group's speaker: its name; else the closest named voice when it is close (`JOINS`); else
    `SOMEONE` when far from the wearer's voice and long enough to tell; else None."""
    centroids = {name: heard.centroid(members) for name, members in voices.items()}
    speaker_of: dict[int, str | None] = dict(names)
    for group in set(own) - set(names):
        closeness = {name: float(own[group] @ c) for name, c in centroids.items()}
        closest = max(closeness, key=lambda name: closeness[name])
        if closeness[closest] >= JOINS:
            speaker_of[group] = closest
        elif closeness[WEARER] < NOT_WEARER and heard.long_enough(group):
            speaker_of[group] = SOMEONE
        else:
            speaker_of[group] = None
    return speaker_of


def _remembered(known: Sequence[Voice], dim: int) -> dict[str, NDArray[np.float64]]:
    """Each remembered name's voice: the unit mean of its recordings' vectors, weighted by seconds heard (a
    vector of another size, from another encoder, is no voice this one can compare)."""
    totals: dict[str, NDArray[np.float64]] = {}
    for voice in known:
        if len(voice.vector) != dim:
            continue
        weighted = np.asarray(voice.vector, dtype=np.float64) * voice.seconds
        totals[voice.name] = totals.get(voice.name, 0) + weighted
    return {name: total / np.linalg.norm(total) for name, total in totals.items() if np.linalg.norm(total) > 0}


def _recognised(vector: NDArray[np.float64], remembered: dict[str, NDArray[np.float64]]) -> str | None:
    """The remembered voice `vector` is: at least `RECOGNISED` close, and by `MARGIN` closer than any other."""
    ranked = sorted(((float(vector @ v), name) for name, v in remembered.items()), reverse=True)
    if not ranked or ranked[0][0] < RECOGNISED:
        return None
    if len(ranked) > 1 and ranked[0][0] - ranked[1][0] < MARGIN:
        return None
    return ranked[0][1]


def _wearer(
    own: dict[int, NDArray[np.float64]], talk: dict[int, float], remembered: dict[str, NDArray[np.float64]]
) -> int:
    """The wearer's voice group: the one recognised as the wearer's remembered voice, else the longest."""
    recognised = [group for group, vector in own.items() if _recognised(vector, remembered) == WEARER]
    if recognised:
        return max(recognised, key=lambda group: float(own[group] @ remembered[WEARER]))
    return max(talk, key=lambda group: talk[group])


def _names(
    segments: Sequence[TranscriptSegment], usable: list[int], groups: NDArray[Any], wearer: int
) -> dict[int, str]:
    """Voice group → the name the wearer's neighbouring lines call it more than half the time."""
    group_of = dict(zip(usable, map(int, groups), strict=True))
    votes: dict[int, Counter[str]] = defaultdict(Counter)
    for i in usable:
        if group_of[i] != wearer:
            continue
        line = segments[i]
        for name in addressed(line.text):
            for j in (i - 1, i + 1):
                other = group_of.get(j)
                if other is None or other == wearer:
                    continue
                gap = segments[j].start_s - line.end_s if j > i else line.start_s - segments[j].end_s
                if gap < TURN_GAP_S:
                    votes[other][name] += 1
    named = {}
    for group, counted in votes.items():
        name, count = counted.most_common(1)[0]
        if count * 2 > sum(counted.values()):
            named[group] = name
    return named
