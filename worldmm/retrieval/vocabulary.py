"""The stems said (a user's lexical index's vocabulary, or the memories' in hand), and whether a stem one letter
from another is among them: speech recognition writes a name heard before with another spelling (Marco, Marko).

Only the standard library here: the retrieval models carry a `Vocabulary`, and a handler importing them pays for
nothing else.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from collections.abc import Set as AbstractSet

MIN_LETTERS = 4
"""Stems shorter than this are never taken for one another: too many short words are one letter apart."""


class Vocabulary(Collection[str]):
    """Stems said (a set, or a dict's keys: looked up, never scanned). `near` looks up the spellings one letter
    from a stem, from the letters the stems are written in (gathered once, on its first call, and kept with the
    vocabulary), rather than comparing the stem with every stem said."""

    def __init__(self, stems: AbstractSet[str] | Mapping[str, object]) -> None:
        self._stems = stems
        self._letters: str | None = None

    def __contains__(self, stem: object) -> bool:
        return stem in self._stems

    def __iter__(self) -> Iterator[str]:
        return iter(self._stems)

    def __len__(self) -> int:
        return len(self._stems)

    def near(self, stem: str) -> bool:
        """Whether a stem said is `stem` or `stem` with one letter after the first changed, added or dropped."""
        return self.spelling(stem) is not None

    def spelling(self, stem: str) -> str | None:
        """The stem said that is `stem`, or else `stem` with one letter after the first changed, added or dropped
        (the first such, in a fixed order); None when there is none or `stem` is too short to tell."""
        if len(stem) < MIN_LETTERS:
            return None
        if self._letters is None:  # two threads may both gather them: the same letters, either kept
            self._letters = "".join(sorted(set("".join(self._stems))))
        away = _one_letter_away(stem, self._letters)
        return next((said for said in away if said in self._stems and one_edit(stem, said)), None)


def _one_letter_away(stem: str, letters: str) -> Iterator[str]:
    """`stem`, and every spelling of it with one letter after the first dropped, or changed or added (`letters`)."""
    yield stem
    for i in range(1, len(stem) + 1):
        head, tail = stem[:i], stem[i:]
        if tail:
            yield head + tail[1:]
            yield from (head + letter + tail[1:] for letter in letters)
        yield from (head + letter + tail for letter in letters)


def one_edit(a: str, b: str) -> bool:
    """Whether `b` is `a`, or `a` with one letter after the first changed, added or dropped (both of at least
    `MIN_LETTERS` letters)."""
    if abs(len(a) - len(b)) > 1 or min(len(a), len(b)) < MIN_LETTERS or a[0] != b[0]:
        return False
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return a[i + 1 :] == b[i + 1 :] or a[i:] == b[i + 1 :] or a[i + 1 :] == b[i:]
