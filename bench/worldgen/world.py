"""A seeded random world: the wearer's people, places, objects, foods, routines and events.

Names, surnames (for places and streets) and jobs come from Faker's en_US lists; objects, foods, activities,
events, venue kinds, spots at home and reasons from the hand-written `words.txt` beside this file. Every list is
sorted and then drawn from with `random.Random(seed)`, so a world depends on the seed and the lists' contents
alone (not on Faker's own random draws). Nothing here knows how questions are answered.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

WORDS_FILE = Path(__file__).with_name("words.txt")

SAMPLE_VOCABULARY = (
    "Katrina",
    "Emma",
    "Marco",
    "Nina",
    "Doctor Lee",
    "Lee",
    "Daniel",
    "Pepper",
    "Sophie",
    "Tom",
    "Corner Cafe",
    "Corner Café",
    "Northwind",
    "Riverside",
    "Oak Avenue",
    "Maple Street",
    "Green Leaf",
    "blue notebook",
    "vitamin D",
    "cappuccino",
    "umbrella",
    "tennis",
    "coffee beans",
    "cat food",
    "orange juice",
    "Thai",
)
"""The sample recordings' names, places and things: no world draws them (a fresh day must not echo the days
the answer code was tuned on)."""

# Voices: espeak-ng accents and variants Whisper hears well; each person of a world gets a variant of their own
# (two people sharing one were taken for one voice on the sample recordings).
ACCENTS = ("en-gb-x-rp", "en-us")  # Whisper heard 85-94% of words in these; en-gb-scotland and "en" 71-82%
FEMALE_VARIANTS = ("f1", "f2", "f3", "f4", "f5")
MALE_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7")
SPEECH_RATE = 140  # words a minute, as the samples

RELATIONS = (
    "flatmate",
    "neighbour",
    "colleague",
    "manager",
    "best friend",
    "cousin",
    "landlord",
    "personal trainer",
    "study partner",
    "team leader",
    "business partner",
    "climbing partner",
)
"""What a person is to the wearer (gendered kinship words are added by gender: sister, brother)."""
GENDERED_RELATIONS = {"f": ("sister",), "m": ("brother",)}
SPANS = ("this afternoon", "this evening", "tomorrow", "the weekend", "tomorrow evening", "my day off",
         "next week", "the long weekend", "Friday evening", "Sunday morning")  # fmt: skip
"""What a day's plan is for: each once a world, so a plan's questions are never ambiguous across days."""
STREET_SUFFIXES = ("Street", "Road", "Avenue", "Lane", "Drive", "Way", "Place", "Court", "Terrace", "Row")
SHIRTS = ("#c62828", "#6a1b9a", "#283593", "#00838f", "#2e7d32", "#f9a825", "#ef6c00", "#4e342e", "#37474f")


@dataclass(frozen=True)
class WorldPerson:
    """Someone the wearer knows: a name, what they are to the wearer, their job and their voice."""

    name: str
    gender: str  # "f" or "m": which pronoun the dialogue uses
    relation: str
    job: str
    voice: str
    shirt: str

    @property
    def she(self) -> str:
        return "she" if self.gender == "f" else "he"

    @property
    def her(self) -> str:
        return "her" if self.gender == "f" else "his"


@dataclass(frozen=True)
class Venue:
    """A named place: its owner's surname, its kind and its street ("Hartley's bike shop on Elm Road")."""

    owner: str
    kind: str
    street: str

    @property
    def name(self) -> str:
        return f"{self.owner}'s {self.kind}"


@dataclass
class World:
    """Everything a seed draws once; days draw from it without reuse (`take`)."""

    seed: int
    me_voice: str
    town: str
    home_street: str
    people: list[WorldPerson]
    venues: list[Venue]
    shops: list[Venue]
    lists: dict[str, list[str]]
    rng: random.Random
    used: set[str] = field(default_factory=set)

    def take(self, kind: str) -> str:
        """An entry of list `kind` that no day of this world has used yet."""
        pool = [entry for entry in self.lists[kind] if entry not in self.used]
        entry = self.rng.choice(pool)
        self.used.add(entry)
        return entry

    def unused(self, kind: str) -> list[str]:
        """Entries of `kind` never drawn: what unanswerable questions ask about."""
        return [entry for entry in self.lists[kind] if entry not in self.used]


@cache
def word_lists() -> dict[str, tuple[str, ...]]:
    """The hand-written lists of `words.txt` by section, sample vocabulary removed, sorted."""
    sections: dict[str, list[str]] = {}
    current = ""
    for raw in WORDS_FILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            sections[current] = []
        else:
            sections[current].append(line)
    return {name: tuple(sorted({e for e in entries if not mentions_sample(e)})) for name, entries in sections.items()}


@cache
def faker_lists() -> dict[str, tuple[str, ...]]:
    """First names (the most common of each gender), surnames and short jobs from Faker's en_US providers."""
    from faker.providers.job.en_US import Provider as Jobs
    from faker.providers.person.en_US import Provider as Persons

    def common(names: dict[str, float], count: int) -> tuple[str, ...]:
        ranked = sorted(names.items(), key=lambda item: (-item[1], item[0]))
        chosen = [n for n, _ in ranked if n.isalpha() and 3 <= len(n) <= 8 and not mentions_sample(n)]
        return tuple(sorted(chosen[:count]))

    jobs = sorted(
        {
            job.lower()
            for job in Jobs.jobs
            if "," not in job and "(" not in job and "/" not in job and len(job.split()) <= 3
        }
    )
    return {
        "female_names": common(Persons.first_names_female, 250),
        "male_names": common(Persons.first_names_male, 250),
        "surnames": tuple(
            sorted(n for n in Persons.last_names if n.isalpha() and len(n) <= 9 and not mentions_sample(n))
        ),
        "jobs": tuple(j for j in jobs if not mentions_sample(j)),
    }


def mentions_sample(text: str) -> bool:
    """Whether `text` holds a word or name of the sample recordings (whole words, any case)."""
    return any(re.search(rf"\b{re.escape(word)}\b", text, re.I) for word in SAMPLE_VOCABULARY)


def make_world(seed: int, people: int = 10, venues: int = 200, shops: int = 60) -> World:
    """The world of `seed`: `people` people with distinct names, relations and voice variants, and `venues`
    named places and `shops` named shops on streets of one town."""
    rng = random.Random(seed)
    names = faker_lists()
    surnames = list(names["surnames"])
    rng.shuffle(surnames)
    town = surnames.pop() + rng.choice(("ton", "field", "bury", "ford", "ham", "wick", "ley", "mouth", "stead"))
    streets = [f"{surnames.pop()} {rng.choice(STREET_SUFFIXES)}" for _ in range(12)]
    home_street = streets.pop()
    accents = list(ACCENTS)
    me_voice = f"{rng.choice(accents)}+{rng.choice(MALE_VARIANTS + FEMALE_VARIANTS)}"
    me_variant = me_voice.split("+")[1]
    free = {"f": [v for v in FEMALE_VARIANTS if v != me_variant], "m": [v for v in MALE_VARIANTS if v != me_variant]}
    for variants in free.values():
        rng.shuffle(variants)
    relations = list(RELATIONS)
    rng.shuffle(relations)
    cast: list[WorldPerson] = []
    taken: set[str] = set()
    for index in range(people):
        gender = "f" if index % 2 == 0 else "m"
        if not free[gender]:
            gender = "m" if gender == "f" else "f"
        name = rng.choice([n for n in names[f"{'female' if gender == 'f' else 'male'}_names"] if n not in taken])
        taken.add(name)
        kin = [r for r in GENDERED_RELATIONS[gender] if r not in {p.relation for p in cast}]
        relation = kin[0] if kin and rng.random() < 0.3 else relations.pop()
        voice = f"{rng.choice(accents)}+{free[gender].pop()}"
        cast.append(WorldPerson(name, gender, relation, rng.choice(names["jobs"]), voice, SHIRTS[index % len(SHIRTS)]))
    kinds = list(word_lists()["venues"])
    rng.shuffle(kinds)
    places = [Venue(surnames.pop(), kinds.pop(), rng.choice(streets)) for _ in range(venues)]
    kinds = list(word_lists()["shops"])
    rng.shuffle(kinds)
    stores = [Venue(surnames.pop(), kinds.pop(), rng.choice(streets)) for _ in range(shops)]
    lists = {name: list(entries) for name, entries in word_lists().items()}
    lists["spans"] = list(SPANS)
    return World(seed, me_voice, town, home_street, cast, places, stores, lists, rng)


def key_word(phrase: str) -> str:
    """The word of a list entry an answer must state: its last word, cut to a stem a singular or plural answer
    both contain ("cherries" -> "cherr", "boxes" -> "box", "plants" -> "plant")."""
    word = phrase.split()[-1].strip("'").lower()
    if len(word) <= 4 or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-3]
    if word.endswith(("oes", "ses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word
