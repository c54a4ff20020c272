"""The answer composed from memories: the relevant line, the time in plain words, and no memory without relevance."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support.harness import make_settings
from worldmm.llm.scripted import ScriptedLLM
from worldmm.retrieval.compose import (
    NO_MEMORY,
    Candidate,
    Composed,
    best_sentence,
    compose_answer,
    describe_when,
    judged_quote,
)
from worldmm.retrieval.models import MemoryKind, RetrievedMemory
from worldmm.retrieval.timeref import parse_time_reference
from worldmm.services import Services

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("postgres_lexemes")]

NOW = datetime(2025, 3, 11, 12, 30, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(
    ("moment", "words"),
    [
        (datetime(2025, 3, 11, 8, 14, tzinfo=UTC), "this morning at 8:14"),
        (datetime(2025, 3, 11, 12, 5, tzinfo=UTC), "this afternoon at 12:05"),
        (datetime(2025, 3, 10, 19, 42, tzinfo=UTC), "yesterday at 19:42"),
        (datetime(2025, 3, 3, 11, 15, tzinfo=UTC), "on Monday 3 March at 11:15"),
        (datetime(2024, 12, 30, 9, 0, tzinfo=UTC), "on Monday 30 December 2024 at 9:00"),
    ],
)
def test_describe_when_says_the_time_relative_to_the_question(moment: datetime, words: str) -> None:
    assert describe_when(moment, NOW) == words


def test_best_sentence_prefers_the_statement_to_the_question_it_answers() -> None:
    services = Services(make_settings(), llm=ScriptedLLM())
    memory = "Hey! Thanks for helping with my slides. Sure, Marco. When is your presentation?\n" + (
        "My presentation is on Friday at two in the afternoon, to the whole team."
    )
    sentence, heard = best_sentence(services, "When is Marco's presentation?", memory)
    assert sentence.startswith("My presentation is on Friday") and not heard


def test_best_sentence_says_when_the_sentence_was_heard_rather_than_captioned() -> None:
    services = Services(make_settings(), llm=ScriptedLLM())
    memory = "At my desk in the office (heard: Me: I am putting my keys in the drawer of my desk.)"
    assert best_sentence(services, "Where are my keys?", memory) == (
        "Me: I am putting my keys in the drawer of my desk.",
        True,
    )


def _memories(*texts: str, start_minute: int = 0) -> list[RetrievedMemory]:
    """Episodic 30 s windows, one a minute from 8:00 (each later one said later)."""
    return [
        RetrievedMemory(
            id=str(n),
            memory_type=MemoryKind.EPISODIC,
            text=t,
            score=1.0,
            source="test",
            start_time=datetime(2025, 3, 11, 8, start_minute + n, tzinfo=UTC),
            end_time=datetime(2025, 3, 11, 8, start_minute + n, 30, tzinfo=UTC),
            duration_seconds=30,
        )
        for n, t in enumerate(texts)
    ]


def _services() -> Services:
    return Services(make_settings(), llm=ScriptedLLM())


@pytest.mark.parametrize("question", ["Where are my keys now?", "Where are my keys?"])
def test_a_question_about_now_takes_the_latest_memory_that_answers_it(question: str) -> None:
    memories = _memories(
        "I heard: I am taking my keys and my notebook from the hallway shelf.",
        "I heard: I am putting my keys in the floor of my desk.",
        "I heard: My keys are in my desk drawer. Do not forget them tonight.",
        "I heard: My key you tomorrow.",
    )
    composed = compose_answer(_services(), question, memories, NOW)
    assert "My keys are in my desk drawer." in composed.answer, composed.answer
    assert composed.memories == [memories[2]]
    assert composed.answer.startswith("This morning at 8:02, heard:")


def test_an_amount_asked_for_is_quoted_with_the_sentence_it_leans_on() -> None:
    memories = _memories("I heard: I always get a cappuccino here before work. That is $4.50. Thank you, Emma.")
    composed = compose_answer(_services(), "How much did my cappuccino cost?", memories, NOW)
    assert '"I always get a cappuccino here before work. That is $4.50."' in composed.answer, composed.answer


def test_a_reply_to_a_spoken_question_carries_its_words_and_a_name_may_be_heard_spelt_otherwise() -> None:
    memories = _memories(
        "I heard: Marko asked if we can meet at half past nine. I replied yes.",
        "I heard: Sure, Marko, when is your presentation? My presentation is on Friday afternoon to the team.",
    )
    composed = compose_answer(_services(), "When is Marco's presentation?", memories, NOW)
    assert "My presentation is on Friday afternoon" in composed.answer, composed.answer
    assert composed.memories == [memories[1]]


def test_habit_words_count_less_than_what_the_habit_is_about() -> None:
    memories = _memories(
        "I heard: I always have a cup of tea every morning.",
        "I heard: I walk to the cafe like every morning.",
        "I heard: No thanks. I only drink one coffee a day.",
    )
    composed = compose_answer(_services(), "What do I drink every morning?", memories, NOW)
    assert "I only drink one coffee a day." in composed.answer, composed.answer


def test_who_is_a_name_with_no_fact_about_it_is_answered_from_its_first_mentions() -> None:
    # GIVEN no semantic fact about Marco, only windows that mention him (as the recogniser spelt it)
    memories = _memories(
        "I heard: It is cold and sunny today.",
        "I heard: Hey, thanks for helping with my slides. Sure, Marko.",
        "I heard: Marko asks if we can meet at half past nine.",
        "I heard: Marko will fix slide three this evening.",
    )
    composed = compose_answer(_services(), "Who is Marco?", memories, NOW)
    # THEN the answer quotes the first two windows that mention him, and cites both
    assert composed.memories == [memories[1], memories[2]]
    assert composed.answer.startswith("Marco: this morning at 8:01, heard:"), composed.answer
    assert "helping with my slides" in composed.answer and "half past nine" in composed.answer
    # AND a semantic fact about him, when there is one, is the answer
    fact = RetrievedMemory(id="f", memory_type=MemoryKind.SEMANTIC, text="Marco is my colleague", score=1.0, source="t")
    composed = compose_answer(_services(), "Who is Marco?", [*memories, fact], NOW)
    assert composed.memories == [fact] and "my colleague" in composed.answer


def test_nothing_relevant_is_not_remembered_and_cites_nothing() -> None:
    memories = _memories("I heard: It is cold and sunny today.", "I heard: I am watering the plants.")
    assert compose_answer(_services(), "What is my dog's name?", memories, NOW) == Composed(NO_MEMORY, [])


@pytest.mark.parametrize(
    ("question", "day"),
    [("What did I do on Tuesday?", 11), ("What did I do last Tuesday?", 4), ("What did I do on Friday?", 7)],
)
def test_a_weekday_is_read_from_the_moment_asked_and_on_that_weekday_means_today(question: str, day: int) -> None:
    # (worldmm.retrieval.timeref: "on Tuesday" asked on a Tuesday is that day; "last Tuesday" the week before)
    reference = parse_time_reference(question.lower(), NOW)
    assert reference.since == datetime(2025, 3, day, tzinfo=UTC)


def test_an_irregular_past_counts_as_its_verb() -> None:
    memories = _memories(
        "I heard: I am sitting at the big window table of the cafe with my blue notebook and a pen.",
        "I heard: Oh no. I think I left my blue notebook on the table at the cafe.",
    )
    composed = compose_answer(_services(), "Where did I leave my blue notebook?", memories, NOW)
    assert "I think I left my blue notebook on the table at the cafe." in composed.answer, composed.answer


def test_a_number_said_in_words_matches_the_same_number_in_digits() -> None:
    memories = _memories(
        "I heard: Slide 3 has last year's budget numbers.",
        "I heard: Slide 5 is wrong, the team photo is missing.",
        "I heard: Something went wrong with the printer.",
    )
    composed = compose_answer(_services(), "What is wrong with slide three?", memories, NOW)
    assert "Slide 3 has last year's budget numbers." in composed.answer, composed.answer


def test_a_title_written_short_before_a_name_is_the_word_said() -> None:
    memories = _memories(
        "I heard: Do not forget your appointment at nine.",
        "I heard: Dr Lee is in room four.",
        "I heard: The dr said nothing about the bill.",
    )
    composed = compose_answer(_services(), "What's my doctor called?", memories, NOW)
    assert "Dr Lee is in room four." in composed.answer, composed.answer


def test_a_bare_mention_opening_a_memory_is_quoted_with_what_follows() -> None:
    memories = _memories("Marco: Hey! Thanks for helping with my slides.")
    composed = compose_answer(_services(), "Who is Marco?", memories, NOW)
    assert '"Marco: Hey! Thanks for helping with my slides."' in composed.answer, composed.answer


def test_a_question_asking_who_is_answered_by_a_sentence_that_names_someone() -> None:
    memories = _memories(
        "I heard: Did I leave a blue notebook on the window table?",
        "I heard: I found my notebook in my bag. Hi, Emma. Yes, we found it and keep it behind the counter.",
    )
    composed = compose_answer(_services(), "Who found my notebook?", memories, NOW)
    assert "Emma" in composed.answer, composed.answer
    # AND with nobody named in any relevant sentence, nobody is made up: nothing is remembered
    nameless = _memories("I heard: I found my notebook in my bag.", "I heard: Yes, we found it.")
    assert compose_answer(_services(), "Who found my notebook?", nameless, NOW).answer == NO_MEMORY


def test_who_said_a_line_answers_who_and_the_speaker_is_no_word_the_line_shares() -> None:
    memories = _memories(
        "I heard: I always get a cappuccino here before work. Emma: That is four dollars fifty.",
        "I heard: Marco: I am nervous. Marco: The client from Boston will be there. You will be fine.",
        "I heard: I am at the office. Someone: I am at the front desk today.",
        "I heard: Katrina: Do not forget your doctor's appointment.",
    )
    # THEN the line's speaker answers who said it, and is quoted with the line
    composed = compose_answer(_services(), "Who said they were nervous?", memories, NOW)
    assert "Marco: I am nervous." in composed.answer, composed.answer
    assert composed.memories == [memories[1]]
    # AND a question naming the speaker finds no answer in the speaker's name alone, nor does one asking
    # what someone is called: who said a line is not who the line is about
    for question in ("What did Emma eat for breakfast?", "What is my doctor called?"):
        assert compose_answer(_services(), question, memories, NOW).answer == NO_MEMORY, question
    # AND another speaker's "I am at ..." is not where I am
    assert "the office" in compose_answer(_services(), "Where am I?", memories, NOW).answer


def test_a_model_judges_who_said_a_line_only_when_the_question_asks_who() -> None:
    [memory] = _memories("I heard: Yes, please, Emma, a large cappuccino. Emma: You order the same thing every day.")
    piece = Candidate(
        "You order the same thing every day.", True, memory, "Yes, please, Emma, a large cappuccino.", None, "Emma"
    )
    assert judged_quote("Who said I order the same thing?", piece) == (
        "Yes, please, Emma, a large cappuccino. Emma: You order the same thing every day."
    )
    assert judged_quote("How old is Emma?", piece) == (
        "Yes, please, Emma, a large cappuccino. You order the same thing every day."
    )


def test_a_sentence_heard_goes_before_a_semantic_fact_that_shares_as_many_words() -> None:
    fact = RetrievedMemory(id="f", memory_type=MemoryKind.SEMANTIC, text="I walk like morning", score=1.0, source="t")
    memories = _memories("I heard: I walk to the cafe like every morning, it is cold and sunny.")
    composed = compose_answer(_services(), "What is the weather like on my morning walk?", [fact, *memories], NOW)
    assert composed.memories == memories, composed.answer


def test_a_sentence_sharing_only_a_minor_word_of_the_question_does_not_answer_it() -> None:
    memories = _memories(
        "I heard: The budget number on slide three is from last year.",
        "I heard: I am paying with my phone. Thank you, Emma.",
        "I heard: Marco will fix slide three this evening.",
    )
    assert compose_answer(_services(), "What is Marco's phone number?", memories, NOW).answer == NO_MEMORY
    composed = compose_answer(_services(), "What will Marco fix this evening?", memories, NOW)
    assert "Marco will fix slide three" in composed.answer, composed.answer


@pytest.mark.parametrize(
    ("question", "answered"),
    [
        ("What time does the plumber come?", True),
        ("What time does the cafe open?", False),
        ("How long did my walk to the cafe take?", False),
        ("How long did I walk for?", True),
    ],
)
def test_a_clock_time_or_a_length_of_time_asked_for_must_be_said(question: str, answered: bool) -> None:
    memories = _memories(
        "I heard: I am walking to the Corner Cafe, like every morning.",
        "I heard: Okay, the plumber comes at eleven o'clock.",
        "I heard: I walked for twenty minutes today.",
    )
    composed = compose_answer(_services(), question, memories, NOW)
    assert (composed.answer != NO_MEMORY) is answered, composed.answer


def test_the_words_asking_for_a_time_count_less_than_what_the_time_is_of() -> None:
    memories = _memories(
        "I heard: I am leaving the spare key for the plumber. Okay, the plumber comes at eleven o'clock.",
        "I heard: Marco asks if we can meet at half past nine. Time to go. I am leaving the cafe now.",
    )
    composed = compose_answer(_services(), "What time will the plumber arrive?", memories, NOW)
    assert "the plumber comes at eleven" in composed.answer, composed.answer


def _summary(text: str) -> RetrievedMemory:
    """A 3-minute summary from 8:00."""
    return RetrievedMemory(
        id="summary",
        memory_type=MemoryKind.EPISODIC,
        text=text,
        score=1.0,
        source="test",
        start_time=datetime(2025, 3, 11, 8, 0, tzinfo=UTC),
        end_time=datetime(2025, 3, 11, 8, 3, tzinfo=UTC),
        duration_seconds=180,
    )


def test_a_sentence_of_a_summary_is_told_as_the_first_window_that_said_it() -> None:
    summary = _summary("I am walking to the cafe. That is four dollars fifty for the coffee.")
    windows = _memories(
        "I am walking to the cafe.",
        "Hello. That is four dollars fifty for the coffee.",
        "Again: that is four dollars fifty for the coffee.",
    )
    composed = compose_answer(
        _services(),
        "How much was the coffee?",
        [summary],
        NOW,
        windows_of=lambda memory: windows if memory is summary else [],
    )
    assert composed.memories == [windows[1]]
    assert "at 8:01" in composed.answer and "30-second" in composed.answer, composed.answer


def test_a_summary_whose_sentence_no_window_holds_is_cited_itself() -> None:
    summary = _summary("That is four dollars fifty for the coffee.")
    windows = _memories("I am walking to the cafe.")
    composed = compose_answer(
        _services(), "How much was the coffee?", [summary], NOW, windows_of=lambda memory: windows
    )
    assert composed.memories == [summary] and "3-minute" in composed.answer, composed.answer
