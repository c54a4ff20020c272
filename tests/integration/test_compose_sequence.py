"""Composed answers that read beyond one sentence: what was said before or after, who was spoken to, where
I was, two questions in one, and the kind of fact a question asks for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.harness import make_settings
from tests.support.memory import SteeredEmbedder
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.embedding import providers
from worldmm.retrieval.compose import NO_MEMORY, asks_for_people, closest_in_meaning, compose_answer, rank_sentences
from worldmm.retrieval.models import MemoryKind, RetrievedMemory
from worldmm.retrieval.timeref import parse_time_reference
from worldmm.services import Services

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("postgres_lexemes")]

NOW = datetime(2025, 3, 11, 12, 30, tzinfo=UTC)
START = datetime(2025, 3, 11, 8, 0, tzinfo=UTC)


def _windows(*texts: str) -> list[RetrievedMemory]:
    """Consecutive 30-second episodic windows from 8:00 (each ends where the next starts)."""
    return [
        RetrievedMemory(
            id=f"w{n}",
            memory_type=MemoryKind.EPISODIC,
            text=f"I heard: {t}",
            score=1.0,
            source="test",
            start_time=START + timedelta(seconds=30 * n),
            end_time=START + timedelta(seconds=30 * (n + 1)),
            duration_seconds=30,
            segment_id=f"w{n}",
        )
        for n, t in enumerate(texts)
    ]


def _services() -> Services:
    return Services(make_settings(), llm=ScriptedLLM())


def test_after_an_event_the_answer_is_what_was_said_next_even_in_the_next_window() -> None:
    # GIVEN leaving the cafe in one window and arriving at the office in the next, which only `around` holds
    windows = _windows(
        "I think I left my notebook on the table at the cafe.",
        "Time to go. I am leaving the cafe now. Bye.",
        "I am at the office on the third floor. Now I am opening my laptop.",
    )
    composed = compose_answer(
        _services(), "What did I do right after leaving the cafe?", windows[:2], NOW, around=windows[2:]
    )
    # THEN the event is the plain "leaving the cafe" sentence, and the answer what followed it
    assert '"I am leaving the cafe now. I am at the office on the third floor."' in composed.answer, composed.answer
    assert composed.memories == [windows[2]]


def test_before_an_event_the_answer_is_the_nearby_sentence_sharing_the_question_words() -> None:
    windows = _windows(
        "Now I start the budget report.",
        "I like working with music. So I am putting my headphones on.",
    )
    composed = compose_answer(_services(), "What did I start just before putting my headphones on?", windows, NOW)
    assert '"Now I start the budget report. So I am putting my headphones on."' in composed.answer, composed.answer


def test_before_a_time_is_not_read_as_before_an_event() -> None:
    windows = _windows("I will finish the first draft before lunch.", "Quiet work time now.")
    composed = compose_answer(_services(), "What will I finish before lunch?", windows, NOW)
    assert "first draft before lunch" in composed.answer, composed.answer


@pytest.mark.parametrize(
    ("question", "opening"),
    [("Who did I talk to this morning?", "Katrina, Emma and Marco"), ("How many people did I speak with?", "Three")],
)
def test_who_was_spoken_to_lists_the_people_addressed_by_name_in_order(question: str, opening: str) -> None:
    windows = _windows(
        "Good morning, Katrina. You are up early.",
        "The client from Boston will be there.",
        "Yes please, Emma, a large cappuccino. Thank you, Emma.",
        "Sure, Marco, when is your presentation?",
    )
    assert asks_for_people(question)
    composed = compose_answer(_services(), question, [], NOW, around=windows)
    assert composed.answer.startswith(opening), composed.answer
    assert "Boston" not in composed.answer.split("(")[0]
    assert composed.memories == [windows[0], windows[2], windows[3]]


def test_how_many_people_on_a_team_is_not_who_i_spoke_to() -> None:
    windows = _windows("Good morning, Katrina. You are up early.", "Sure, Marco, when is your presentation?")
    assert not asks_for_people("How many people are on Marco's team?")
    composed = compose_answer(_services(), "How many people are on Marco's team?", windows, NOW, around=windows)
    assert composed.answer == NO_MEMORY, composed.answer


def test_a_person_asked_for_is_not_one_the_question_names() -> None:
    # GIVEN the name asked about (spelt as the recogniser heard it) and another name, each with the presentation
    windows = _windows(
        "Marko is nervous about his presentation on Friday.",
        "Marko will fix slide three tonight.",
        "The client from Boston will be at the presentation.",
        "It is cold and sunny today.",
    )
    composed = compose_answer(_services(), "Who is coming to Marco's presentation?", windows, NOW)
    # THEN the person who answers is the other one
    assert "client from Boston" in composed.answer, composed.answer


def test_a_number_asked_for_needs_a_number_in_the_answer() -> None:
    windows = _windows("Marco asked if we can meet after lunch. I replied yes.")
    assert compose_answer(_services(), "What is Marco's phone number?", windows, NOW).answer == NO_MEMORY


@pytest.mark.parametrize(
    "question",
    [
        "What is the plumber's name?",  # "the plumber comes back" names nobody
        "What is my doctor's name?",
        "What is Emma's last name?",  # Emma is the name asked about, not an answer
        "What is my doctor called?",  # "called" asks for a name too
        "What's the plumber called?",
    ],
)
def test_a_name_asked_for_needs_a_name_the_question_does_not_give(question: str) -> None:
    windows = _windows(
        "Okay, the plumber comes back at eleven.",
        "Do not forget your doctor's appointment tomorrow.",
        "Yes, please, Emma, a large cappuccino.",
    )
    assert compose_answer(_services(), question, windows, NOW).answer == NO_MEMORY


@pytest.mark.parametrize(
    ("question", "answered"),
    [
        ("How old is Marco?", False),
        ("How old is Emma?", False),  # neither a price nor "every day" nor "a day" is an age
        ("How old are the budget numbers?", True),
        ("How old is Katrina?", True),
    ],
)
def test_how_old_needs_an_age_or_a_time_ago(question: str, answered: bool) -> None:
    windows = _windows(
        "Marco asked if we can meet at half past nine.",
        "The budget numbers are from last year.",
        "Yes, please, Emma, a large cappuccino.\nEmma: You order the same thing every day.",
        "Thank you, Emma.\nEmma: That is $4.50.",
        "Katrina is 34 today, so we are having cake.",
        "I only drink one coffee a day.\nMarco: Only one coffee.",
    )
    composed = compose_answer(_services(), question, windows, NOW)
    assert (composed.answer != NO_MEMORY) == answered, composed.answer


def test_an_age_of_two_digits_before_its_unit_is_an_age() -> None:
    windows = _windows("Tasha, 34 years old, joined the team.")
    assert "34 years old" in compose_answer(_services(), "How old is Tasha?", windows, NOW).answer


def test_where_i_was_doing_something_is_where_i_said_i_did_it() -> None:
    windows = _windows(
        "Good morning. I am making breakfast in the kitchen.",
        "I am at the office on the third floor.",
    )
    composed = compose_answer(_services(), "Where was I making breakfast?", windows, NOW)
    assert "in the kitchen" in composed.answer, composed.answer


def test_where_am_i_is_the_latest_place_i_said_i_was_not_one_i_will_be() -> None:
    windows = _windows(
        "I am at the cafe on Maple Street.",
        "I am at the office on the third floor.",
        "Remember, I am at the doctor tomorrow morning.",
    )
    composed = compose_answer(_services(), "Where am I right now?", windows, NOW)
    assert '"I am at the office on the third floor."' in composed.answer, composed.answer


def test_a_thing_said_without_a_place_is_quoted_with_where_i_said_i_was() -> None:
    windows = _windows("I am at the office on the third floor. Now I am opening my laptop.")
    composed = compose_answer(_services(), "Where's my laptop?", windows, NOW)
    assert '"I am at the office on the third floor. Now I am opening my laptop."' in composed.answer, composed.answer


def test_two_questions_in_one_are_each_answered() -> None:
    windows = _windows(
        "Pick up the notebook at the cafe at lunch.",
        "We are almost out of milk. Then I will buy more milk on the way home tonight.",
    )
    composed = compose_answer(_services(), "What do I need to pick up and buy later today?", windows, NOW)
    assert "notebook" in composed.answer and "milk" in composed.answer, composed.answer
    assert [m.id for m in composed.memories] == ["w0", "w1"]


def test_which_thing_is_answered_by_a_sentence_that_names_it() -> None:
    windows = _windows(
        "No problem. See you at eleven.",
        "The budget numbers on slide three are from last year.",
    )
    composed = compose_answer(_services(), "Which slide has a problem?", windows, NOW)
    assert "slide three" in composed.answer, composed.answer


@pytest.mark.parametrize("question", ["What time is the review?", "When is the review?"])
def test_a_time_asked_for_is_a_time_of_day_not_any_number(question: str) -> None:
    # "slide 3" and "two slides" are numbers, not times: no sentence here says when the review is
    windows = _windows("Let us review the budget on slide 3.", "The review has two slides.")
    assert compose_answer(_services(), question, windows, NOW).answer == NO_MEMORY
    # a time of day said beside them answers
    windows = _windows(*(w.text.removeprefix("I heard: ") for w in windows), "The review is at half past nine.")
    assert '"The review is at half past nine."' in compose_answer(_services(), question, windows, NOW).answer


@pytest.mark.parametrize("question", ["When will slide three be fixed?", "When is slide three getting fixed?"])
def test_a_question_about_what_will_happen_is_answered_by_what_was_planned(question: str) -> None:
    # both share "slide three" and neither "fixed" (as speech recognition heard it); one says when it will be
    windows = _windows(
        "The budget numbers on slide three are from last year.",
        "I will pick slide three this evening.",
    )
    composed = compose_answer(_services(), question, windows, NOW)
    assert '"I will pick slide three this evening."' in composed.answer, composed.answer


class _CountingEmbedder:
    """Vectors from letter counts (close texts, close vectors); keeps every text it was asked to embed."""

    dim = 26

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.embedded += texts
        return [[float(t.casefold().count(c)) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts]


def test_questions_in_one_process_embed_each_sentence_once(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = _CountingEmbedder()
    monkeypatch.setattr(providers, "build_text_embedder", lambda settings: embedder)
    services = Services(make_settings(), llm=ScriptedLLM())  # the composition root's embedder
    windows = _windows("It is cold and sunny today.", "I am walking to the cafe on Maple Street.")
    first, second = "What was it like outside on my walk?", "Was it cold today?"
    assert rank_sentences(services, first, windows) and closest_in_meaning(services, first, windows, 2)
    assert rank_sentences(services, second, windows)
    assert {first, second} <= set(embedder.embedded)
    assert len(embedder.embedded) == len(set(embedder.embedded))


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Who thanked me for helping with the slides?", "Marco"),  # the reply after it addresses him
        ("Who said the client from Boston will be there?", "Marco"),  # it replies to him
        ("Who did Marco thank for helping with the slides?", None),  # the one addressed is the one asked about
        ("Who was I talking to in the kitchen?", "Katrina"),  # "was I" asks who, as "is Marco" does not
    ],
)
def test_a_sentence_naming_nobody_was_said_by_whom_the_reply_beside_it_addresses(
    question: str, answer: str | None
) -> None:
    windows = _windows(
        "Hey, thanks for helping with my slides. Sure, Marco, let us look at them.",
        "See you later, Marco. The client from Boston will be there.",
        "I am making breakfast in the kitchen. Yes, and Katrina, you are early today.",
    )
    composed = compose_answer(_services(), question, windows, NOW)
    if answer is None:
        assert composed.answer == NO_MEMORY, composed.answer
    else:
        assert answer in composed.answer and composed.memories, composed.answer


def test_a_sentence_is_quoted_with_the_statement_after_it_that_goes_on_about_it() -> None:
    # GIVEN the walk, a sentence that goes on about it, then one that does not, then a question about it
    windows = _windows(
        "I am walking to the cafe on Maple Street. It is cold and sunny today. Emma waves at me.",
        "I am walking home now. Is it going to rain?",
    )
    composed = compose_answer(_services(), "What was it like on my walk to the cafe?", windows, NOW)
    # THEN the walk is quoted with what goes on about it, and not with what does not
    assert '"I am walking to the cafe on Maple Street. It is cold and sunny today."' in composed.answer, composed.answer
    walking_home = rank_sentences(_services(), "Did I walk home?", windows)
    assert walking_home and walking_home[0].quote == "I am walking home now.", [p.quote for p in walking_home]


def test_a_clause_that_says_when_counts_less_than_what_is_asked_about() -> None:
    windows = _windows("Good morning, I am making breakfast in the kitchen.", "I am putting my coffee mug in the sink.")
    composed = compose_answer(_services(), "Where did my mug go after breakfast?", windows, NOW)
    assert '"I am putting my coffee mug in the sink."' in composed.answer, composed.answer


def test_of_sentences_that_share_the_same_words_the_one_closer_in_meaning_goes_first() -> None:
    # GIVEN two sentences that share only "notebook" with the question, the longer one further from it in meaning
    question = "When am I collecting the notebook?"
    plan = "I am sitting at the window table, writing my plan for today in my blue notebook."
    note = "Note to self: pick up the blue notebook at the cafe at lunch."

    def at(cosine: float, axis: int) -> list[float]:
        vector = [0.0] * 8
        vector[0], vector[axis] = cosine, (1 - cosine**2) ** 0.5
        return vector

    embedder = SteeredEmbedder(8, {question: at(1.0, 1), plan: at(0.2, 2), note: at(0.6, 3)})
    services = Services(make_settings(), llm=ScriptedLLM(), embedder=embedder)
    # THEN the one closer in meaning is the composer's first, not the one that says more
    ranked = rank_sentences(services, question, _windows(plan, note))
    assert [c.said for c in ranked][:1] == [note], [c.said for c in ranked]


@pytest.mark.parametrize(
    "question",
    [
        "What did the cappuccino cost me?",
        "What was the bill for my cappuccino?",
        # what a bill does, said at the question's end
        "What did my cappuccino come to?",
        "What did the cappuccino set me back?",
    ],
)
def test_a_price_asked_without_how_much_is_answered_with_the_price(question: str) -> None:
    windows = _windows(
        "Yes, please, Emma, a large cappuccino.\nEmma: You order the same thing every day.",
        "I always get a cappuccino here before work.\nEmma: That is $4.50.",
    )
    composed = compose_answer(_services(), question, windows, NOW)
    assert "$4.50" in composed.answer, composed.answer


_CAFE = (
    "I am walking to the cafe for my morning drink.",
    "Yes, please, Emma, a large cappuccino.\nEmma: You order the same thing every day.",
    "I always get a cappuccino here before work.\nEmma: That is $4.50.",
    "I am leaving the cafe now.",
)


@pytest.mark.parametrize(
    ("question", "quote", "cosine", "answer"),
    [
        # a price or a size asked in other words, the sentence that gives it nearer the question than any other
        ("How much did I spend at the cafe?", _CAFE[2].replace("\n", " "), 0.4, "$4.50"),
        ("What size was my drink?", "Yes, please, Emma, a large cappuccino.", 0.4, "a large cappuccino"),
        # not near enough in meaning, or the price of something never mentioned: nothing recorded answers it
        ("How much did the croissant cost?", _CAFE[2].replace("\n", " "), 0.4, NO_MEMORY),
        ("How much did I spend at the cafe?", _CAFE[2].replace("\n", " "), 0.2, NO_MEMORY),
        ("What size was my drink?", "Yes, please, Emma, a large cappuccino.", 0.2, NO_MEMORY),
        # the thing asked about is heard, but minutes after the price: the price is not of it
        ("How much did I pay for lunch?", _CAFE[2].replace("\n", " "), 0.4, NO_MEMORY),
    ],
)
def test_a_rare_kind_of_fact_in_other_words_is_found_nearer_in_meaning(
    question: str, quote: str, cosine: float, answer: str
) -> None:
    # GIVEN the one sentence that gives the kind of fact asked (a price, a size), sharing no word with the
    # question, at a cosine below that at which any sentence sharing none is a candidate (DENSE_KEEP)
    embedder = SteeredEmbedder(64, {question: [1.0] + [0.0] * 63, quote: [cosine, (1 - cosine**2) ** 0.5] + [0.0] * 62})
    services = Services(make_settings(), llm=ScriptedLLM(), embedder=embedder)
    later = ("Quiet work time now.",) * 8 + ("I will pick up my notebook at lunch.",)
    composed = compose_answer(services, question, _windows(*_CAFE, *later), NOW)
    # THEN it answers when it is near enough for an answer in other words (DENSE_ANSWERS) and every other word of
    # the question is heard within a minute of it (SCENE_S), and only then
    assert answer in composed.answer, composed.answer


def test_a_line_that_shares_only_a_name_gives_way_to_one_near_in_meaning() -> None:
    # GIVEN "employed", heard nowhere, and one window: a longer line that names Katrina and a place, and her line
    # about work, near the question in meaning, that shares only who said it
    question, work = "Where is Katrina employed?", "Katrina: I start work at the bakery at ten."
    embedder = SteeredEmbedder(64, {question: [1.0] + [0.0] * 63, work: [0.6, 0.8] + [0.0] * 62})
    services = Services(make_settings(), llm=ScriptedLLM(), embedder=embedder)
    window = _windows(f"Good morning, Katrina, you are up early today making pancakes in the kitchen.\n{work}")
    composed = compose_answer(services, question, window, NOW)
    # THEN the name alone does not answer: the line close in meaning does
    assert "at the bakery" in composed.answer, composed.answer


def test_with_a_word_heard_nowhere_the_answer_itself_must_be_near_in_meaning() -> None:
    # GIVEN "bus", heard nowhere; a line that shares "take" and "office" but is far from the question in meaning,
    # and one that shares no word, near it (a candidate by meaning alone)
    question, walk = "Did I take the bus to the office?", "I walk to work."
    office = "I take the lift up to the office, third floor."
    embedder = SteeredEmbedder(
        64, {question: [1.0] + [0.0] * 63, office: [0.1, 0.99**0.5] + [0.0] * 62, walk: [0.6, 0.8] + [0.0] * 62}
    )
    services = Services(make_settings(), llm=ScriptedLLM(), embedder=embedder)
    composed = compose_answer(services, question, _windows(office, walk, *("Quiet work time now.",) * 8), NOW)
    # THEN the line near in meaning answers, not the one that shares more words
    assert '"I walk to work."' in composed.answer, composed.answer


def test_a_price_said_just_after_the_thing_bought_is_quoted_with_it() -> None:
    windows = _windows("I order a large cappuccino.\nEmma: Four dollars fifty, please.\nI am paying with my phone.")
    composed = compose_answer(_services(), "What did the cappuccino cost?", windows, NOW)
    assert '"I order a large cappuccino. Emma: Four dollars fifty, please."' in composed.answer, composed.answer


@pytest.mark.parametrize(
    ("question", "quoted"),
    [
        ("Who washed the dishes last time?", "Alice is washing the dishes."),  # the latest of the two
        ("Who washed the dishes most recently?", "Alice is washing the dishes."),
        ("Who washed the dishes first?", "Tasha is washing the dishes in the sink."),  # shares more words
        # it says what is happening now: the last time is before the present
        ("Shure is now washing the dishes; who washed the dishes last time?", "Alice is washing the dishes."),
    ],
)
def test_the_last_time_something_happened_is_the_latest_memory_that_tells_it(question: str, quoted: str) -> None:
    windows = _windows(
        "Tasha is washing the dishes in the sink.", "Alice is washing the dishes.", "Shure is washing the dishes."
    )
    # GIVEN the third window is the present when the question is asked ("now"), an hour after the others
    present = windows[2].model_copy(
        update={"start_time": NOW - timedelta(seconds=40), "end_time": NOW - timedelta(seconds=10)}
    )
    composed = compose_answer(_services(), question, [*windows[:2], present] if "now" in question else windows[:2], NOW)
    assert f'"{quoted}"' in composed.answer, composed.answer


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # the reason is said next, with no word that says it is one
        ("Why is Marco nervous?", "Marco: The client from Boston will be there."),
        # a word of the question nowhere heard ("upset"): what was said next is not known to be its reason
        ("Why is Marco upset?", NO_MEMORY),
    ],
)
def test_a_reason_said_next_is_quoted_with_what_it_explains(question: str, answer: str) -> None:
    # GIVEN a line that names Marco, as close in meaning to the question as a paraphrase is (above DENSE_ANSWERS)
    asked = "Marco asked if we can meet at nine."
    embedder = SteeredEmbedder(64, {question: [1.0] + [0.0] * 63, asked: [0.4, 0.84**0.5] + [0.0] * 62})
    services = Services(make_settings(), llm=ScriptedLLM(), embedder=embedder)
    windows = _windows(
        "Marco: I am nervous about Friday.\nMarco: The client from Boston will be there.", f"{asked}\nI replied yes."
    )
    composed = compose_answer(services, question, windows, NOW)
    assert answer in composed.answer, composed.answer


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # a Friday no memory was made on: the day is something said, in the memory that answers
        ("Who are we presenting to on Friday?", "to the whole team"),
        # the lunch heard of was not said to be Friday's
        ("Where did I have lunch on Friday?", NO_MEMORY),
    ],
)
def test_a_past_day_nothing_was_recorded_on_must_be_said_in_the_answer(question: str, answer: str) -> None:
    # GIVEN memories of a Tuesday, asked about the Friday before it as the searches read it
    windows = _windows(
        "I will pick up my notebook at the cafe at lunch.", "Marco: On Friday we present to the whole team."
    )
    named = parse_time_reference(question, START + timedelta(minutes=5))
    composed = compose_answer(_services(), question, windows, NOW, named_time=named)
    assert answer in composed.answer, composed.answer


_ENDS = ("Katrina: I start work at the bakery at the end.", "I am putting my coffee mug in the sink.")
_BACK = (
    "I am taking my keys and my notebook from the hallway shelf.",
    "Katrina: Okay, the plumber comes back at eleven o'clock.",
    "Note to self: pick up the notebook at the cafe at lunch.",
)
_FIRST = ("Good morning. I am making breakfast in the kitchen.", "I will finish my first draft before lunch.")
_SLIDE = ("The budget numbers on slide 3 are from last year.",)
_MUSIC = ("I like working with music, so I am putting my headphones on.", "Quiet work time now.")
_TICKET = (
    "I am booking a train ticket for the conference next Monday. The ticket costs one hundred and twenty dollars.",
    "I will print the ticket tonight.",
    "The train leaves at seven in the morning.",
)
_ALARM = (
    "Daniel: Do you want to play tennis? Yes, I would love to. What time? Daniel: 10 o'clock at the park.",
    "I am setting my alarm for 730. The doctor is at nine.",
)
_WAY_HOME = (
    "I always get a cappuccino here before work.",
    "Hi, I am home.",
    "I am at the bus stop. I get the number 14 bus home.",
)
_UNNAMED_VOICE = (
    "Katrina: Do not forget your doctor's appointment. Katrina: It is tomorrow morning at nine o'clock.",
    "Someone: Can you feed our cat tomorrow morning? Someone: I leave for the bakery at six.",
)
_TENNIS = (
    "I am cooking pasta for dinner.",
    "Daniel: Do you want to play tennis on Saturday morning? Yes, I would love to. Daniel: Ten o'clock at Riverside"
    " Park.",
)
_READING = (
    "Now I am starting the budget report. I like working with music.",
    "I am booking a train ticket for the conference next Monday.",
    "Now I am reading my book on the sofa.",
)
_BREAKFAST = ("Good morning. I am making breakfast in the kitchen.", "I am having toast and eggs for breakfast.")
_OFFERED = ("Marco asked if we can meet at half past nine.", "Marco: You want a coffee from the machine.")
_FAVOUR = (
    "Katrina: Do not forget your doctor's appointment.",
    "Katrina: Can you water the plants by the window?\nSure, I am watering the plants now.",
)
_PLUMBER = "Katrina: Okay, the plumber comes at eleven o'clock this evening."
_KATRINA = ("Katrina: Do not forget your doctor's appointment.", "Do not forget the keys in my desk drawer tonight.")
_APPOINTMENT = (
    "Katrina: Do not forget your doctor's appointment.\nKatrina: It is tomorrow morning at nine o'clock.",
    "Katrina: Have a good day.",
)
# the recogniser's lower-case "corner cafe", and a line that names a person and shares "go"
_CORNER_CAFE = (
    "I am walking to the corner cafe on maple street. I go there every morning.",
    "Marko asked if we can meet at half past nine. Time to go.",
    "I am leaving the cafe now.",
)
_SPARE_KEY = (
    "I am leaving the spare key on the shelf for the plumber.",
    "Katrina: The spare key is on the shelf, I saw it.",
)
# a verb that says little ("see") shared with a line that gives a time, beside the topic's line
_DOCTOR = (
    "Katrina: Do not forget your doctor's appointment.\nRight, doctor, tomorrow morning at nine o'clock.",
    "Okay, doctor in my calendar now.",
    "And remember I am at the doctor tomorrow morning. So I will come in late.",
    "Marko: See you tomorrow at around 11.",
)
# the person a question names, and a line without them that shares its other words
_EVENING = (
    "Katrina: We are almost out of milk.\nThen I will buy more milk on the way home tonight.",
    "Katrina: I am going to my pottery class tonight, so I will be home late.",
    "Katrina: Have a good day.",
    "Marko: I booked a class at the gym tonight.",
)

_REPORT = (
    "I finished the budget report slides.",
    "The budget report is due on Thursday.",
    "I like working with music. So I am putting my headphones on.",
)
_MUG = ("I am putting my coffee mug in the sink.", "I am taking my blue notebook from the shelf.")
_CLIENT = (
    "I am at the office, third floor.\nMarko: My presentation is on Friday afternoon to the whole team.",
    "Marko: The client from Boston will be there.",
)
_SEE_YOU = "Marko: See you tomorrow at around 11."
_KEPT = (
    "Emma: We will keep your blue notebook behind the counter.",
    "Note to self. Pick up the blue notebook at the cafe at lunch.",
)
_OFFER = ("Marko: You want a coffee from the machine.", "I am putting my coffee mug in the sink.")
_POTTERY = ("Katrina: I am going to my pottery class tonight, so I will be home late.", "Katrina: Have a good day.")


@pytest.mark.parametrize(
    ("question", "heard", "answer"),
    [
        # who said a line is a word it shares with the question, beside the word both lines share
        ("What did Katrina tell me not to forget?", _KATRINA, "doctor's appointment"),
        # a line that shares only who said it does not answer what nothing recorded tells
        ("What car does Katrina drive?", _KATRINA, NO_MEMORY),
        # "which day" asks for a day, not for the word
        ("Which day is my doctor's appointment?", _APPOINTMENT, "tomorrow morning at nine"),
        ("On which date is my appointment?", _APPOINTMENT, "tomorrow morning at nine"),
        # a place's name as the recogniser wrote it, in lower case, answers what it is called
        ("What is the cafe I go to called?", _CORNER_CAFE, "the corner cafe"),
        ("What is the name of the cafe I go to?", _CORNER_CAFE, "the corner cafe"),
        # someone named by what they do answers "who"; not who said something: the one who said it does
        ("Who did I leave the spare key for?", _SPARE_KEY, "for the plumber"),
        ("Who said the spare key is on the shelf?", _SPARE_KEY, "Katrina: The spare key is on the shelf"),
        # the topic outweighs a light verb; a line where the person asked about is goes first
        ("When am I seeing the doctor?", _DOCTOR, "tomorrow morning at nine"),
        ("What class has Katrina booked for tonight?", _EVENING, "pottery class"),
        # what is asked said at the question's end ("… when?"); where someone is from is a name after "from"
        ("The budget report has to be finished when?", _REPORT, "due on Thursday"),
        ("What's the deadline for the budget report?", (*_REPORT, "Now I am starting the budget report."), "Thursday"),
        ("Where is the client at Marco's presentation from?", _CLIENT, "from Boston"),
        # a day and an hour asked at once: a line that gives either ("on Friday afternoon")
        ("Marco's presentation is on which day and at what time?", (*_CLIENT, _SEE_YOU), "on Friday afternoon"),
        # "going to" before a verb says when, not what is done: Katrina "going to my pottery class" answers neither
        ("When is Katrina going to repaint the hallway?", _POTTERY, NO_MEMORY),
        ("When am I going to phone Katrina?", _POTTERY, NO_MEMORY),
        # "this evening" is "tonight"
        ("What is Katrina up to this evening?", (*_POTTERY, "Marko: I will fix slide three this evening."), "pottery"),
        # where someone is doing something, not where the thing was last said to be
        ("Where is the cafe keeping my notebook?", _KEPT, "behind the counter"),
        ("Where are they keeping my notebook at the cafe?", _KEPT, "behind the counter"),
        ("Where is my notebook now?", _KEPT, "at the cafe at lunch"),
        # "You want a coffee?" offers; it gives no reason for saying no
        ("Why did I turn down the coffee from the machine?", _OFFER, NO_MEMORY),
        # a colour asked for: the line that gives one, not the line that only names the thing
        ("What colour is my coffee mug?", _MUG, NO_MEMORY),
        ("What colour is my notebook?", _MUG, "my blue notebook"),
        # "end up", "get back" and "first thing" say little of what is asked
        ("Where did my mug end up after breakfast?", _ENDS, "in the sink"),
        ("When will I get my notebook back?", _BACK, "at lunch"),
        ("Which room was I in first thing this morning?", _FIRST, "in the kitchen"),
        # a phone number is a run of digits, an email an address, a song a title, a bus its number or name
        ("What is Emma's phone number?", _SLIDE, NO_MEMORY),
        ("What is Marco's phone number?", (*_SLIDE, "Marco: My phone is 555 0142."), "555 0142"),
        ("What is Marco's email address?", ("Marco asked if we can meet at half past nine.",), NO_MEMORY),
        ("What is Marco's email address?", ("Marco: My email is marco at northwind dot com.",), "northwind dot com"),
        ("Which song was I listening to while I worked?", _MUSIC, NO_MEMORY),
        ("Which song was I listening to?", (*_MUSIC, "I am listening to Blue Moon now."), "Blue Moon"),
        ("Which bus did I take to the office?", ("I am at the office, third floor.",), NO_MEMORY),
        ("Which bus did I take to the office?", ("I took the number 12 bus to the office.",), "number 12 bus"),
        (
            "Which train did I catch this morning?",
            ("Good morning, Emma, a large cappuccino please.",),
            NO_MEMORY,
        ),
        ("What is my laptop password?", ("Now I am opening my laptop.",), NO_MEMORY),
        ("What is my laptop password?", ("My laptop password is sunflower forty two.",), "sunflower forty two"),
        # what was eaten at a meal, not that the meal was made
        ("What did I eat for breakfast?", _BREAKFAST[:1], NO_MEMORY),
        ("What did I have for breakfast?", _BREAKFAST, "toast and eggs"),
        ("What did Katrina have for breakfast?", (_BREAKFAST[0], "Katrina: Have a good breakfast."), NO_MEMORY),
        # a fee is a price; a family name is a name
        ("What is the plumber's fee?", ("Katrina: Okay, the plumber comes at eleven o'clock.",), NO_MEMORY),
        ("What is Katrina's family name?", ("Katrina: My family is visiting tonight.",), NO_MEMORY),
        # how many of a thing: a number of that thing, not any number
        (
            "How many slides does Marco's presentation have?",
            ("Marco: Slide 3 of my presentation is the budget.",),
            NO_MEMORY,
        ),
        ("How many slides does Marco's presentation have?", ("Marco: My presentation has twelve slides.",), "twelve"),
        ("How many cups of coffee do I drink a day?", ("I only drink one coffee a day.",), "one coffee"),
        # which doctor, city or restaurant: a name
        ("Which doctor am I seeing tomorrow?", ("Right, the doctor, tomorrow morning at nine o'clock.",), NO_MEMORY),
        ("Which doctor am I seeing tomorrow?", ("Tomorrow I am seeing the doctor, Dr Patel.",), "Dr Patel"),
        ("Which city is the client from?", ("Marco: The client from Boston will be there.",), "Boston"),
        # whose: the one who says "my"
        ("Whose slides am I helping with?", ("Marco: Hey, thanks for helping with my slides.",), "Marco: Hey"),
        # what a question says by what is done: an offer, a favour asked
        ("What did Marco offer me?", _OFFERED, "You want a coffee"),
        ("What favour did Katrina ask of me?", _FAVOUR, "water the plants"),
        # "how come" asks why
        ("How come Katrina won't be around this evening?", (*_POTTERY, _PLUMBER), "pottery class"),
        # "how much was the …" asks a price, not any number
        ("How much was the train ticket?", _TICKET, "one hundred and twenty dollars"),
        ("How much milk is left?", ("Katrina: We have two bottles of milk left.",), "two bottles"),
        # "started reading" is about reading, not about starting something
        ("What was I doing before I started reading?", _READING, "booking a train ticket"),
        # a place by its name; a question asked aloud, quoted with the reply that gives the fact
        ("Where are we playing tennis?", _TENNIS, "at Riverside Park"),
        ("Where is the client from?", ("Marco: I am nervous. The client from Boston will be there.",), "Boston"),
        ("Where am I meeting Marco?", ("Marco asked if we can meet in March.",), NO_MEMORY),
        # how I got somewhere: a way of getting there
        ("How did I get home from work?", _WAY_HOME, "number 14 bus"),
        ("How did I get home from work?", _WAY_HOME[:2], NO_MEMORY),
        # "seven thirty" as the recogniser writes it is a time of day
        ("What time is my alarm set for?", _ALARM, "alarm for 730"),
        # a birthday says an age
        ("How old is Mum turning?", ("Sophie: Dinner is at six. Sophie: It is Mum's sixtieth birthday.",), "sixtieth"),
        # a thing named by the name after it, not by another thing "called" something
        (
            "What's our cat called?",
            ("Katrina: Can you feed our cat Pepper tomorrow morning?", "My book is called The Silent River."),
            "Pepper",
        ),
        # … where the cat is talked of more often than anything is called: "called" asks a name, no more
        (
            "What's our cat called?",
            (
                "Katrina: Can you feed our cat Pepper tomorrow morning? Katrina: I leave for the bakery at six.",
                "The cat is asleep on the sofa. I am giving the cat some water.",
                "My book is called The Silent River.",
            ),
            "Pepper",
        ),
        # … and as every word of it is heard, not the time of a question said aloud
        ("What time is my alarm set for?", (_ALARM[0], _ALARM[1].replace("730", "seven thirty")), "seven thirty"),
        # a voice never named may be the person asked about
        ("What time does Katrina head to the bakery tomorrow?", _UNNAMED_VOICE, "at six"),
        (
            "What time does Katrina start at the bakery?",
            ("Katrina: I start work at the bakery at ten.", "Someone: Do you want a bag? It is nine dollars."),
            "at ten",
        ),
    ],
)
def test_the_answer_is_the_line_that_gives_what_is_asked_as_it_was_heard(
    question: str, heard: tuple[str, ...], answer: str
) -> None:
    composed = compose_answer(_services(), question, _windows(*heard), NOW)
    assert answer in composed.answer, composed.answer
