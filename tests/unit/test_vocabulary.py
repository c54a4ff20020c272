"""The stems said, and the stem one letter from another (a name speech recognition spelled another way)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from worldmm.retrieval.vocabulary import Vocabulary, one_edit


@pytest.mark.parametrize(
    ("said", "asked"),
    [
        ("marko", "marco"),  # a letter changed
        ("marcos", "marco"),  # a letter added
        ("mrco", "marco"),  # a letter dropped
        ("marco", "marco"),  # the stem itself
    ],
)
def test_a_stem_one_letter_after_the_first_from_a_said_one_is_near(said: str, asked: str) -> None:
    assert one_edit(asked, said) and Vocabulary({said}).near(asked)


@pytest.mark.parametrize(
    ("said", "asked"),
    [
        ("darco", "marco"),  # the first letter changed
        ("marcia", "marco"),  # two letters changed or added
        ("anne", "ann"),  # shorter than four letters
        ("bat", "cat"),
        ("", "marco"),
    ],
)
def test_a_stem_two_letters_or_a_first_letter_away_is_not_near(said: str, asked: str) -> None:
    assert not one_edit(asked, said) and not Vocabulary({said}).near(asked)


def test_near_finds_what_a_scan_of_every_stem_finds() -> None:
    # GIVEN a vocabulary of short random stems over a few letters (many of them one letter apart)
    rng = random.Random(7)
    letters = "abcde"

    def stem() -> str:
        return "".join(rng.choice(letters) for _ in range(rng.randint(1, 8)))

    stems = {stem() for _ in range(3000)}
    vocabulary = Vocabulary(stems)
    # THEN for every stem asked, `near` agrees with `one_edit` against every stem said
    asked = [stem() for _ in range(2000)] + [""]
    found = [vocabulary.near(a) for a in asked]
    assert found == [any(one_edit(a, s) for s in stems) for a in asked]
    assert 100 < sum(found) < len(asked)  # both answers were exercised


class _Counted(set[str]):
    """Stems that count how often they are read through."""

    reads = 0

    def __iter__(self) -> Iterator[str]:
        self.reads += 1
        return super().__iter__()


def test_the_vocabulary_is_read_once_not_for_every_stem_asked() -> None:
    # GIVEN a user's vocabulary
    stems = _Counted({"marko", "melon", "meeting", "presentation"})
    vocabulary = Vocabulary(stems)
    # WHEN three names are asked after
    near = [vocabulary.near(name) for name in ("marco", "melissa", "presentations")]
    # THEN the stems were grouped once, on the first, and each later name read only its group
    assert near == [True, False, True]
    assert stems.reads == 1
