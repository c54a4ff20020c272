"""Days of a seeded world: 30-second windows of dialogue that state facts in varied words, and the questions
whose answers must state them.

A day is a list of episodes (a purchase, a request, a plan, an appointment, a cancellation, ...), each one or
two windows long, shuffled by the seed. Each episode picks one of several wordings for what it says and for
what is asked, and draws its people, places and things from the world without reuse, so no two days of a world
hold the same fact about the same thing (a memory of every day can answer each day's questions without
ambiguity). Unanswerable questions ask about list entries that no day said.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import TypeVar

from bench.worldgen.world import Venue, World, WorldPerson, faker_lists, key_word, make_world

T = TypeVar("T")
MAX_WORDS_PER_WINDOW = 44
"""What fits in a 30-second window at 140 words a minute with the samples' lead-in, gaps and tail."""
NO_MEMORY = "I don't remember that."
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
STAFF_VOICES = ("en-us+Mike", "en-us+robert", "en-us+steph", "en-us+Annie")
"""Shop staff speak with espeak-ng's named variants, none of which the wearer's people use."""
GATHERINGS = frozenset(
    [
        "party",
        "class",
        "night",
        "dinner",
        "lunch",
        "match",
        "tournament",
        "festival",
        "concert",
        "meeting",
        "evening",
        "workshop",
        "tasting",
        "walk",
        "run",
        "trip",
        "course",
        "show",
        "fair",
        "sale",
        "session",
        "lesson",
        "reunion",
        "barbecue",
        "picnic",
        "brunch",
        "gala",
        "quiz",
        "rehearsal",
        "practice",
        "weekend",
        "retreat",
        "tour",
        "race",
        "marathon",
        "ceremony",
        "day",
        "market",
        "exhibition",
        "opening",
        "premiere",
        "reading",
        "talk",
    ]
)
"""Events people come to in numbers (the last words of such events): what a head count is asked about."""
ERRAND_PLACES = frozenset(
    [
        "station",
        "office",
        "depot",
        "warehouse",
        "tip",
        "scrapyard",
        "courthouse",
        "embassy",
        "cemetery",
        "memorial",
        "kennels",
        "rank",
        "dock",
        "hub",
        "stop",
        "terminal",
        "branch",
        "society",
        "agent's",
        "solicitor's",
        "accountant's",
        "dentist's",
        "optician's",
        "chiropractor's",
        "garage",
        "wash",
        "dealership",
        "centre",
        "lobby",
        "hall",
        "clinic",
        "shop",
        "vet's",
        "tyre",
    ]
)
"""Last words of venue kinds nobody goes out to in the evening: events and nights out are elsewhere."""
HOME_ROOMS = ("Kitchen", "Living room", "Hallway", "Balcony", "Study")
UNITS = ("bags", "boxes", "packs", "tubs", "jars", "punnets", "trays", "tins")
SURFACES = (
    "table",
    "sill",
    "windowsill",
    "mantelpiece",
    "bookshelf",
    "workbench",
    "noticeboard",
    "sideboard",
    "dresser",
    "shelf",
    "bench",
)

_ONES = tuple(
    [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ]
)
_TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty", 6: "sixty", 7: "seventy", 8: "eighty", 9: "ninety"}


def number_words(n: int) -> str:
    """0..99 in words, hyphenated as written English does ("forty-five")."""
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")


def number_facts(n: int) -> str:
    """A count as an answer may state it: digits or words, hyphenated or not."""
    spelled = number_words(n)
    return "|".join(dict.fromkeys((str(n), spelled, spelled.replace("-", " "))))


@dataclass(frozen=True)
class Clock:
    """A time of day said aloud, and every way an answer may write it."""

    hour: int  # 1..12
    minute: int  # 0, 15, 30 or 45

    def spoken(self, style: int) -> str:
        h, nxt = number_words(self.hour), number_words(self.hour % 12 + 1)
        forms = {
            0: (f"at {h}", f"at {h} o'clock"),
            15: (f"at quarter past {h}", f"at {h} fifteen"),
            30: (f"at half past {h}", f"at {h} thirty"),
            45: (f"at quarter to {nxt}", f"at {h} forty-five"),
        }[self.minute]
        return forms[style % 2]

    def facts(self) -> str:
        h, w, nxt = self.hour, number_words(self.hour), number_words(self.hour % 12 + 1)
        if self.minute == 0:
            options = [
                f"{h}:00",
                f"{w} o'clock",
                f"{h} o'clock",
                f"at {w}",
                f"at {h}",
                f"{h} pm",
                f"{h} p.m.",
                f"{h} am",
                f"{h} a.m.",
                f"{w} pm",
                f"{w} am",
            ]
        else:
            m = number_words(self.minute)
            options = [f"{h}:{self.minute:02d}", f"{h}.{self.minute:02d}", f"{w} {m}", f"{w} {m.replace('-', ' ')}"]
            options += {15: [f"quarter past {w}"], 30: [f"half past {w}", f"{w}-thirty"], 45: [f"quarter to {nxt}"]}[
                self.minute
            ]
        return "|".join(dict.fromkeys(options))

    def written(self) -> str:
        return f"{self.hour}:{self.minute:02d}"


@dataclass(frozen=True)
class Price:
    """An amount in dollars and cents, said aloud, and every way an answer may write it."""

    dollars: int
    cents: int

    def spoken(self, style: int) -> str:
        d = number_words(self.dollars)
        if not self.cents:
            return f"{d} dollars"
        c = number_words(self.cents)
        return (f"{d} dollars {c}", f"{d} dollars and {c} cents", f"{d} {c}")[style % 3]

    def facts(self) -> str:
        d = number_words(self.dollars)
        if not self.cents:
            return "|".join(dict.fromkeys((str(self.dollars), d, d.replace("-", " "))))
        c = number_words(self.cents)
        options = [f"{self.dollars}.{self.cents:02d}", f"{self.dollars},{self.cents:02d}"]
        for dw in dict.fromkeys((d, d.replace("-", " "))):
            for cw in dict.fromkeys((c, c.replace("-", " "))):
                options += [f"{dw} dollars {cw}", f"{dw} dollars and {cw}", f"{dw} {cw}", f"{dw}-{cw}"]
        return "|".join(dict.fromkeys(options))

    def written(self) -> str:
        return f"${self.dollars}.{self.cents:02d}" if self.cents else f"${self.dollars}"


@dataclass
class Window:
    """One 30-second window: where, who is seen, what is said, labelled things in view, and facts it teaches."""

    place: str
    setting: str
    note: str
    lines: list[tuple[str, str]]
    people: list[str] = field(default_factory=list)
    props: list[tuple[str, str]] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)

    def words(self) -> int:
        return sum(len(text.split()) for _, text in self.lines)


@dataclass(frozen=True)
class Question:
    """A question about a day and the fact(s) its answer must state (`a|b`: either), or a refusal."""

    id: str
    kind: str
    question: str
    answer: str
    facts: tuple[str, ...] = ()
    refusal: bool = False
    absent: tuple[str, ...] = ()  # an unanswerable question's key words: said on no day
    windows: tuple[int, ...] = ()  # the windows of the episode that states the answer

    def row(self) -> dict[str, object]:
        """The `questions.jsonl` row (worldmm.demo.load_questions reads it)."""
        row: dict[str, object] = {"id": self.id, "kind": self.kind, "question": self.question, "answer": self.answer}
        if self.refusal:
            row["refusal"] = True
        else:
            row["facts"] = list(self.facts)
        return row


@dataclass
class Day:
    """A recording of one day: its windows, questions and the voices of those who speak."""

    number: int
    session_id: str
    start: datetime
    windows: list[Window]
    questions: list[Question]
    voices: dict[str, str]
    cast: list[str]

    def script_lines(self) -> list[str]:
        return [text for window in self.windows for _, text in window.lines]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _plural(noun: str) -> bool:
    last = noun.split()[-1]
    return last.endswith("s") and not last.endswith(("ss", "us", "is"))


def _preposition(spot: str) -> str:
    return "on" if spot.split()[-1] in SURFACES else "in"


class DayBuilder:
    """Composes one day of `world` from episodes; every draw goes through the world's seeded generator."""

    def __init__(self, world: World, number: int, day: date, start_hour: int) -> None:
        self.world = world
        self.rng = world.rng
        self.number = number
        self.date = day
        self.weekday = WEEKDAYS[day.weekday()]
        self.start = datetime(day.year, day.month, day.day, start_hour, 0, tzinfo=UTC)
        self.episodes: list[list[Window]] = []
        self.questions: list[tuple[str, str, str, tuple[str, ...], int]] = []  # kind, question, answer, facts, episode
        self.episode = 0  # the episode being composed (0: the opening)
        self.episode_windows: dict[int, tuple[int, ...]] = {}  # where each episode's windows ended up
        self.voices: dict[str, str] = {"Me": world.me_voice}
        self.staff_names: set[str] = set()

    # ------------------------------------------------------------ helpers

    def pick(self, options: Sequence[T]) -> T:
        return self.rng.choice(list(options))

    def styles(self, options: int, count: int) -> list[int]:
        """`count` different wordings of `options`, in a seeded order (no window says one shape twice)."""
        return self.rng.sample(range(options), count)

    def ask(self, kind: str, question: str, answer: str, *facts: str) -> None:
        self.questions.append((kind, question, answer, facts, self.episode))

    def other_weekday(self) -> str:
        return self.pick([d for d in WEEKDAYS if d != self.weekday])

    def clock(self) -> Clock:
        return Clock(self.rng.randint(1, 12), self.pick((0, 15, 30, 45)))

    def speaks(self, person: WorldPerson) -> None:
        self.voices[person.name] = person.voice

    def staff(self) -> str:
        names = faker_lists()["female_names"] + faker_lists()["male_names"]
        taken = {p.name for p in self.world.people} | self.world.used
        name = self.pick([n for n in names if n not in taken])
        self.world.used.add(name)
        self.voices[name] = STAFF_VOICES[len(self.staff_names) % len(STAFF_VOICES)]
        self.staff_names.add(name)
        return name

    def once(self, key: str) -> bool:
        """Whether `key` (a person's episode kind) is still free in this world; takes it."""
        if key in self.world.used:
            return False
        self.world.used.add(key)
        return True

    def outing(self) -> Venue:
        """A place people go to for an evening or an event (not a depot or an embassy)."""
        index = next(i for i, v in enumerate(self.world.venues) if v.kind.split()[-1] not in ERRAND_PLACES)
        return self.world.venues.pop(index)

    def home(self) -> str:
        return self.pick(HOME_ROOMS)

    # ------------------------------------------------------------ episodes

    def intro_window(self, people: list[WorldPerson]) -> list[Window]:
        """The wearer says who people are (their relation), on the way somewhere."""
        street = self.world.home_street if self.rng.random() < 0.5 else self.pick([v.street for v in self.world.venues])
        lines = [
            (
                "Me",
                self.pick(
                    (
                        f"I am walking along {street}.",
                        f"Out on {street} now.",
                        f"Heading down {street} in {self.world.town}.",
                    )
                ),
            )
        ]
        for person, style in zip(people, self.styles(4, len(people)), strict=True):
            lines.append(("Me", self.introduce(person, style)))
        facts = [f"{p.name} is my {p.relation}." for p in people]
        return [Window(street, "outside", f"Walking along {street}", lines, props=[("sign", street)], facts=facts)]

    def job_window(self, people: list[WorldPerson]) -> list[Window]:
        """The wearer says what people do for a living (paraphrase: asked by their relation)."""
        lines = [("Me", self.pick(("I am on the bus into town.", "Sitting on the bus now.", "The bus is late again.")))]
        facts = []
        for person in people:
            job = person.job
            article = "an" if job[0] in "aeiou" else "a"
            years = self.rng.randint(2, 15)
            lines.append(
                (
                    "Me",
                    self.pick(
                        (
                            f"{person.name} works as {article} {job}.",
                            f"{person.name} has been {article} {job} for {number_words(years)} years.",
                            f"{person.name} started a new job as {article} {job}.",
                        )
                    ),
                )
            )
            self.ask(
                "paraphrase",
                self.pick((f"What does my {person.relation} do for a living?", f"What is my {person.relation}'s job?")),
                f"{_cap(article)} {job}.",
                key_word(job),
            )
            facts.append(f"{person.name} is {article} {job}.")
        return [Window("Bus", "on the way", "On the bus", lines, facts=facts)]

    def shop(self, before: str | None = None) -> list[Window]:
        """A purchase: where, from whom, how many, how much (and, with `before`, what I was about to do first)."""
        venue = self.world.shops.pop()
        seller = self.staff()
        food, unit = self.world.take("foods"), self.pick(UNITS)
        count = self.rng.randint(2, 9)
        price = Price(self.rng.randint(3, 48), self.pick((0, 0, 20, 25, 50, 75, 80)))
        name, n = venue.name, number_words(count)
        first = Window(
            name,
            "counter",
            f"At {name}",
            [
                (
                    "Me",
                    self.pick(
                        (
                            f"I am at {name} on {venue.street}.",
                            f"Quick stop at {name} on {venue.street}.",
                            f"Now I am at {name}, the one on {venue.street}.",
                        )
                    ),
                ),
                (
                    seller,
                    self.pick(
                        (
                            "Hello again! What can I get you?",
                            "Morning! What would you like today?",
                            "Hi there, what are you after?",
                        )
                    ),
                ),
                (
                    "Me",
                    self.pick(
                        (
                            f"{_cap(n)} {unit} of {food}, please.",
                            f"Can I have {n} {unit} of {food}?",
                            f"I will take {n} {unit} of {food}.",
                        )
                    ),
                ),
            ],
            people=[seller],
            props=[("counter", "counter"), ("bag", food)],
            facts=[f"I bought {count} {unit} of {food} at {name} on {venue.street}."],
        )
        style = self.rng.randint(0, 5)
        second = Window(
            name,
            "paying",
            f"Paying at {name}",
            [
                (
                    seller,
                    self.pick(
                        (
                            f"That comes to {price.spoken(style)}.",
                            f"That will be {price.spoken(style)}, please.",
                            f"{_cap(price.spoken(style))} altogether.",
                        )
                    ),
                ),
                (
                    "Me",
                    self.pick(
                        (
                            f"Here you are, thanks {seller}.",
                            f"Thank you, {seller}. I will pay by card.",
                            f"Thanks, {seller}, that is everything.",
                        )
                    ),
                ),
            ],
            people=[seller],
            props=[("counter", "counter")],
            facts=[f"It cost {price.written()}; {seller} served me."],
        )
        place = f"{venue.owner}|{venue.kind}"
        asked = [
            (
                "price",
                self.pick(
                    (
                        f"How much did the {food} cost?",
                        f"What did I pay for the {food}?",
                        f"How much did I spend at {name}?",
                    )
                ),
                f"{price.written()}.",
                price.facts(),
            ),
            (
                "count",
                self.pick((f"How many {unit} of {food} did I buy?", f"How many {unit} of {food} did I get?")),
                f"{_cap(n)}.",
                number_facts(count),
            ),
            (
                "place",
                self.pick((f"Where did I buy the {food}?", f"Which shop did I get the {food} from?")),
                f"At {name}.",
                place,
            ),
            (
                "people",
                self.pick((f"Who served me at {name}?", f"Who was at the counter at {name}?")),
                f"{seller}.",
                seller,
            ),
            ("place", f"What street is {name} on?", f"{venue.street}.", venue.street.split()[0]),
        ]
        for kind, question, answer, fact in [asked[0], *self.rng.sample(asked[1:], 3)]:
            self.ask(kind, question, answer, fact)
        windows = [first, second]
        if before is not None:
            room = self.home()
            windows.insert(
                0,
                Window(
                    room,
                    "home",
                    f"At home, {room.lower()}",
                    [
                        (
                            "Me",
                            self.pick(
                                (
                                    f"Before I head out, I need to {before}.",
                                    f"First job this morning: {before}.",
                                    f"Right, time to {before}.",
                                )
                            ),
                        )
                    ],
                ),
            )
            self.ask(
                "before-after",
                self.pick(
                    (
                        f"What was I doing just before I went to {name}?",
                        f"What did I have to do before going to {name}?",
                    )
                ),
                f"{_cap(before)}.",
                key_word(before),
            )
        return windows

    def request(self, person: WorldPerson) -> list[Window]:
        """Someone asks me to do something (a second thing they will do themselves is the distractor)."""
        act, own = self.world.take("activities"), self.world.take("activities")
        when = self.pick(("this afternoon", "before dinner", "tomorrow morning", "on your way home", "this weekend"))
        asked = self.pick(
            (
                f"Could you {act} {when}?",
                f"Would you mind if I asked you to {act} {when}?",
                f"Can you do me a favour and {act} {when}?",
                f"I need you to {act} {when}, please.",
            )
        )
        lines = [
            (person.name, f"I am going to {own} myself. {asked}"),
            (
                "Me",
                self.pick(
                    (
                        f"Sure, {person.name}, I will do it.",
                        f"No problem, {person.name}, leave it with me.",
                        f"Okay {person.name}, I can do that.",
                    )
                ),
            ),
        ]
        self.speaks(person)
        if self.rng.random() < 0.5:
            place, setting, people = self.home(), "home", [person.name]
        else:
            place, setting, people = "Phone call", "calling", []
        if self.once(f"request:{person.name}"):  # asked by name or relation once a world: never ambiguous
            self.ask(
                "request",
                self.pick((f"What did {person.name} ask me to do?", f"What favour did {person.name} ask of me?")),
                f"{_cap(act)}.",
                key_word(act),
            )
            self.ask("paraphrase", f"What did my {person.relation} want me to do?", f"{_cap(act)}.", key_word(act))
        else:
            self.ask("request", f"Who asked me to {act}?", f"{person.name}.", person.name)
        props = [("phone", person.name)] if setting == "calling" else []
        window = Window(
            place,
            setting,
            f"{person.name} asks a favour",
            lines,
            people,
            props,
            facts=[f"{person.name} asked me to {act} ({when}); {person.she} will {own}."],
        )
        return [window]

    def plan(self) -> list[Window]:
        """A list of three things to do: the first, the last, what comes after and before."""
        acts = [self.world.take("activities") for _ in range(3)]
        span = self.world.take("spans")
        a1, a2, a3 = acts
        said = self.pick(
            (
                f"My plan for {span}: first {a1}, then {a2}, and after that {a3}.",
                f"Three things to do {span}. First, {a1}. Second, {a2}. Third, {a3}.",
                f"On my list for {span}: {a1}, then {a2}, and finally {a3}.",
            )
        )
        room = self.home()
        self.ask("list", f"What is the first thing on my list for {span}?", f"{_cap(a1)}.", key_word(a1))
        self.ask("list", f"What is the last thing I planned for {span}?", f"{_cap(a3)}.", key_word(a3))
        self.ask("before-after", f"What do I have to do {span} after I {a1}?", f"{_cap(a2)}.", key_word(a2))
        self.ask("before-after", f"What comes before I {a3} {span}?", f"{_cap(a2)}.", key_word(a2))
        return [
            Window(
                room,
                "home",
                "Writing a to-do list",
                [("Me", said)],
                props=[("notepad", "to do")],
                facts=[f"Plan for {span}: {a1}; {a2}; {a3}."],
            )
        ]

    def event(self, person: WorldPerson) -> list[Window]:
        """An appointment: its day, its time, its place."""
        event, day, clock = self.world.take("events"), self.other_weekday(), self.clock()
        venue = self.outing()
        at = clock.spoken(self.rng.randint(0, 1))
        lines = [
            (
                person.name,
                self.pick(
                    (
                        f"The {event} is on {day} {at}.",
                        f"Do not forget, the {event} is {day} {at}.",
                        f"They moved the {event} to {day} {at}.",
                    )
                ),
            ),
            (person.name, self.pick((f"It is at {venue.name} on {venue.street}.", f"We are meeting at {venue.name}."))),
            (
                "Me",
                self.pick(
                    (
                        f"Got it, {person.name}, I will put it in my calendar.",
                        f"{day} then, {person.name}. See you there.",
                        f"Thanks for telling me, {person.name}.",
                    )
                ),
            ),
        ]
        self.speaks(person)
        self.ask(
            "time", self.pick((f"When is the {event}?", f"What time is the {event}?")), f"{day} {at}.", clock.facts()
        )
        self.ask("time", self.pick((f"What day is the {event}?", f"Which day is the {event} on?")), f"{day}.", day)
        self.ask(
            "place",
            self.pick((f"Where is the {event}?", f"Where do I go for the {event}?")),
            f"At {venue.name}.",
            f"{venue.owner}|{venue.kind}",
        )
        room = self.home()
        return [
            Window(
                room,
                "home",
                f"{person.name} talks about the {event}",
                lines,
                [person.name],
                facts=[f"The {event} is on {day} {at}, at {venue.name}."],
            )
        ]

    def cancel(self, person: WorldPerson) -> list[Window]:
        """Someone cannot come to something, and says why."""
        event, day = self.world.take("events"), self.other_weekday()
        reason, key = self.world.take("reasons").split("|")
        self.speaks(person)
        if self.rng.random() < 0.5:
            lines = [
                (person.name, f"I cannot come to the {event} on {day}, because {reason}."),
                (
                    "Me",
                    self.pick(
                        (f"Oh no, {person.name}, that is a shame.", f"I understand, {person.name}. Another time.")
                    ),
                ),
            ]
        else:
            lines = [
                (
                    person.name,
                    self.pick((f"I have to miss the {event} on {day}, sorry.", f"I cannot make the {event} on {day}.")),
                ),
                ("Me", f"Oh no, {person.name}, why not?"),
                (person.name, f"{_cap(reason)}."),
            ]
        who = f"my {person.relation}" if self.once(f"reason-by-relation:{person.name}") else person.name
        self.ask(
            "reason",
            self.pick(
                (
                    f"Why can't {who} come to the {event}?",
                    f"Why is {who} missing the {event}?",
                    f"What is the reason {who} will miss the {event}?",
                )
            ),
            f"{_cap(reason)}.",
            key,
        )
        return [
            Window(
                "Phone call",
                "calling",
                f"{person.name} calls about the {event}",
                lines,
                props=[("phone", person.name)],
                facts=[f"{person.name} will miss the {event}: {reason}."],
            )
        ]

    def pronoun(self, person: WorldPerson) -> list[Window]:
        """A thing named in one sentence and referred to by a pronoun in the next; the question names neither."""
        thing = self.world.take("objects")
        spot = self.world.take("spots")
        it = "them" if _plural(thing) else "it"
        be = "are" if _plural(thing) else "is"
        day = self.other_weekday()
        room = self.home()
        choices = [0, 1, 2]
        self.rng.shuffle(choices)
        keys = {0: f"pronoun-give:{person.name}", 1: "", 2: f"pronoun-return:{day}"}
        choice = next(c for c in choices if not keys[c] or self.once(keys[c]))
        if choice == 0:
            lines = [
                ("Me", f"The {thing} {be} {_preposition(spot)} the {spot}."),
                ("Me", f"I have to give {it} back to {person.name} on {day}."),
            ]
            question = f"What do I have to give back to {person.name}?"
        elif choice == 1:
            venue = self.world.venues.pop()
            self.speaks(person)
            lines = [
                (person.name, f"I left the {thing} {_preposition(spot)} the {spot}."),
                (person.name, f"Can you take {it} to {venue.name} for me?"),
                ("Me", f"Sure, {person.name}."),
            ]
            question = f"What did {person.name} want me to take to {venue.name}?"
        else:
            lines = [
                ("Me", f"{person.name} lent me {person.her} {thing} last month."),
                ("Me", f"I must return {it} before {day}."),
            ]
            question = f"What must I return before {day}?"
        self.ask("pronoun", question, f"The {thing}.", key_word(thing))
        people = [person.name] if choice == 1 else []
        return [
            Window(
                room,
                "home",
                f"The {thing}",
                lines,
                people,
                props=[("bag", thing)],
                facts=[" ".join(text for _, text in lines)],
            )
        ]

    def put_away(self) -> list[Window]:
        """Two things put somewhere: where each is now."""
        lines, facts = [], []
        for style in self.styles(3, 2):
            thing, spot = self.world.take("objects"), self.world.take("spots")
            where = f"{_preposition(spot)} the {spot}"
            said = (
                f"I am putting the {thing} {where}.",
                f"The {thing} goes {where} for now.",
                f"I will keep the {thing} {where}.",
            )[style]
            lines.append(("Me", said))
            self.ask(
                "place",
                self.pick(
                    (f"Where did I put the {thing}?", f"Where is the {thing} now?", f"Where can I find the {thing}?")
                ),
                f"{_cap(where)}.",
                key_word(spot),
            )
            facts.append(f"The {thing} is {where}.")
        room = self.home()
        return [Window(room, "home", "Tidying up", lines, facts=facts)]

    def who_did(self, people: list[WorldPerson]) -> list[Window]:
        """Who did something for me, said about two people in one window."""
        lines = [("Me", self.pick(("A quick note to myself.", "Let me remember this.", "Thinking about the week.")))]
        facts = []
        for person, style in zip(people, self.styles(3, len(people)), strict=True):
            thing = self.world.take("objects")
            said, asked = (
                (f"{person.name} fixed my {thing} yesterday.", f"Who fixed my {thing}?"),
                (f"{person.name} gave me {person.her} old {thing}.", f"Who gave me the {thing}?"),
                (f"{person.name} found my {thing} behind the sofa.", f"Who found my {thing}?"),
            )[style]
            lines.append(("Me", said))
            self.ask("people", asked, f"{person.name}.", person.name)
            facts.append(said)
        return [Window("Living room", "home", "A note to myself", lines, facts=facts)]

    def headcount(self, person: WorldPerson) -> list[Window]:
        """How many people are coming to something."""
        event = self.pick([e for e in self.world.unused("events") if key_word(e) in GATHERINGS])
        self.world.used.add(event)
        count = self.rng.randint(3, 19)
        n = number_words(count)
        self.speaks(person)
        lines = [
            (
                person.name,
                self.pick(
                    (f"We have {n} people coming to the {event}.", f"{_cap(n)} of us signed up for the {event}.")
                ),
            ),
            (
                "Me",
                self.pick(
                    (
                        f"That is more than last time, {person.name}.",
                        f"Great, {person.name}, I will bring some snacks.",
                        f"Good, {person.name}, let us book a big table.",
                    )
                ),
            ),
        ]
        self.ask(
            "count",
            self.pick((f"How many people are coming to the {event}?", f"How many signed up for the {event}?")),
            f"{_cap(n)}.",
            number_facts(count),
        )
        room = self.home()
        return [
            Window(
                room,
                "home",
                f"Planning the {event}",
                lines,
                [person.name],
                facts=[f"{count} people are coming to the {event}."],
            )
        ]

    def tonight(self, person: WorldPerson) -> list[Window]:
        """Where someone is going tonight and when they will be back: asked by their relation, not their name."""
        venue, clock = self.outing(), self.clock()
        at = clock.spoken(self.rng.randint(0, 1))
        self.speaks(person)
        lines = [
            (
                person.name,
                self.pick(
                    (f"I am going to {venue.name} tonight.", f"Tonight I am off to {venue.name} with some friends.")
                ),
            ),
            (person.name, self.pick((f"I will be back {at}.", f"Expect me home {at}."))),
            ("Me", f"Have fun, {person.name}."),
        ]
        r = person.relation
        self.ask(
            "paraphrase",
            self.pick((f"Where is my {r} going tonight?", f"Where will my {r} be this evening?")),
            f"{venue.name}.",
            f"{venue.owner}|{venue.kind}",
        )
        self.ask("time", f"When will my {r} be home tonight?", f"{_cap(at)}.", clock.facts())
        room = self.home()
        return [
            Window(
                room,
                "home",
                f"{person.name} is going out",
                lines,
                [person.name],
                facts=[f"{person.name} goes to {venue.name} tonight, back {at}."],
            )
        ]

    def opening(self, people: list[WorldPerson]) -> Window:
        """The day's first window: the day named, and up to two new people said who they are."""
        room = self.pick(("Kitchen", "Bedroom"))
        lines = [
            (
                "Me",
                self.pick(
                    (
                        f"Good morning. It is {self.weekday}.",
                        f"It is {self.weekday} morning.",
                        f"{self.weekday} again. Time to get up.",
                    )
                ),
            )
        ]
        if not people:
            lines.append(("Me", self.pick(("Let us see what today brings.", "Lots to do today.", "A busy day ahead."))))
        window = Window(room, "home", f"{self.weekday} morning", lines)
        for person, style in zip(people, self.styles(4, len(people)), strict=True):
            window.lines.append(("Me", self.introduce(person, style)))
            window.facts.append(f"{person.name} is my {person.relation}.")
        return window

    def introduce(self, person: WorldPerson, style: int) -> str:
        """A line that says who `person` is to me (wording `style`, 0..3); asks who my (relation) is."""
        n, r = person.name, person.relation
        self.ask("people", f"Who is my {r}?", f"{n}.", n)
        return (
            f"{n} is my {r}.",
            f"My {r} {n} just sent me a message.",
            f"I should call {n} later, {person.she} is my {r}.",
            f"{n}, my {r}, wants to meet up this week.",
        )[style]

    # ------------------------------------------------------------ the day

    def unanswerable(self, said: str, count: int) -> list[tuple[str, str, tuple[str, ...]]]:
        """Plausible questions about list entries whose key word no day has said (`said`: all script text)."""
        lowered = said.lower()

        def fresh(kind: str) -> str:
            pool = [e for e in self.world.unused(kind) if not re.search(rf"\b{re.escape(key_word(e))}", lowered)]
            entry = self.pick(pool)
            self.world.used.add(entry)
            return entry

        world_names = {p.name for p in self.world.people} | self.world.used
        names = [n for n in faker_lists()["female_names"] + faker_lists()["male_names"] if n not in world_names]
        makers = [
            lambda: (lambda f: (f"How much did the {f} cost?", (f,)))(fresh("foods")),
            lambda: (lambda o: (f"Where did I put the {o}?", (o,)))(fresh("objects")),
            lambda: (lambda e: (f"When is the {e}?", (e,)))(fresh("events")),
            lambda: (lambda n: (f"What did {n} ask me to do?", (n,)))(
                self.pick([n for n in names if n.lower() not in lowered])
            ),
            lambda: (lambda v: (f"Why did I go to the {v}?", (v,)))(fresh("venues")),
            lambda: (lambda f: (f"How many {f} did I buy?", (f,)))(fresh("foods")),
            lambda: (lambda a: (f"Who asked me to {a}?", (a,)))(fresh("activities")),
        ]
        chosen = self.rng.sample(makers, count) if count <= len(makers) else makers
        out: list[tuple[str, str, tuple[str, ...]]] = []
        for make in chosen:
            question, absent = make()
            out.append(("unanswerable", question, absent))
        return out

    def build(self, session_id: str, roster: list[WorldPerson]) -> Day:
        """The day's episodes in a seeded order, the opening first; then its questions, numbered."""
        rng = self.rng
        new = [p for p in roster if f"intro:{p.name}" not in self.world.used]
        for person in new:
            self.world.used.add(f"intro:{person.name}")
        untold = [p for p in roster if f"job:{p.name}" not in self.world.used]
        opening = self.opening(new[:2])
        episodes: list[tuple[int, list[Window]]] = []

        def add(make: Callable[..., list[Window]], *args: object) -> None:
            self.episode += 1
            episodes.append((self.episode, make(*args)))

        for start in range(2, len(new), 2):
            add(self.intro_window, new[start : start + 2])
        jobs = rng.sample(untold, min(2, len(untold)))
        for person in jobs:
            self.world.used.add(f"job:{person.name}")
        if jobs:
            add(self.job_window, jobs)
        befores = [self.world.take("activities") for _ in range(2)]
        add(self.shop, befores[0])
        add(self.shop, befores[1])
        add(self.shop)
        people = list(roster)
        rng.shuffle(people)

        def cycle(i: int) -> WorldPerson:
            return people[i % len(people)]

        free = [p for p in roster if f"tonight:{p.name}" not in self.world.used]
        for person in rng.sample(free, min(2, len(free))):
            self.world.used.add(f"tonight:{person.name}")
            add(self.tonight, person)
        for i in range(3):
            add(self.request, cycle(i))
            add(self.event, cycle(i + 3))
            add(self.pronoun, cycle(i + 1))
        add(self.plan)
        add(self.put_away)
        add(self.who_did, [cycle(4), cycle(5)])
        for i in range(2):
            add(self.cancel, cycle(i + 2))
            add(self.headcount, cycle(i + 4))
        rng.shuffle(episodes)
        windows = [opening]
        self.episode_windows[0] = (0,)
        for number, episode in episodes:
            self.episode_windows[number] = tuple(range(len(windows), len(windows) + len(episode)))
            windows += episode
        for window in windows:
            if window.words() > MAX_WORDS_PER_WINDOW:
                raise ValueError(f"day {self.number}: {window.words()} words in one window: {window.lines}")
        cast = [p.name for p in roster if p.name in self.voices]
        return Day(self.number, session_id, self.start, windows, [], self.voices, cast)

    def ask_all(self, day: Day, said: str) -> None:
        """The day's questions in a seeded order, numbered: those its episodes asked, and about a tenth
        unanswerable, whose key words no day (`said`: every day's script) says."""
        questions = [
            Question("", kind, text, answer, facts, windows=self.episode_windows[episode])
            for kind, text, answer, facts, episode in self.questions
        ]
        for kind, text, absent in self.unanswerable(said, max(1, round(len(questions) / 9))):
            questions.append(Question("", kind, text, NO_MEMORY, refusal=True, absent=absent))
        self.rng.shuffle(questions)
        day.questions = [
            replace(q, id=f"w{self.world.seed}-d{self.number}-{i + 1:02d}") for i, q in enumerate(questions)
        ]


def make_days(seed: int, days: int) -> tuple[World, list[Day]]:
    """The world of `seed` and its first `days` days, on consecutive dates."""
    world = make_world(seed)
    rng = world.rng
    first = date(2026, 1, 5) + timedelta(days=rng.randrange(0, 300))
    built: list[tuple[DayBuilder, Day]] = []
    for index in range(days):
        day = first + timedelta(days=index)
        roster = rng.sample(world.people, 6)
        builder = DayBuilder(world, index + 1, day, rng.randint(7, 10))
        built.append((builder, builder.build(f"world-{seed}-{day.isoformat()}", roster)))
    said = " ".join(line for _, made in built for line in made.script_lines())
    for builder, made in built:
        builder.ask_all(made, said)
    return world, [made for _, made in built]


def kinds(day: Day) -> Counter[str]:
    """How many questions of each kind a day asks."""
    return Counter(q.kind for q in day.questions)
