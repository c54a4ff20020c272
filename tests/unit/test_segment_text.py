"""What an episodic memory shows: caption plus what was heard."""

from __future__ import annotations

import pytest

from worldmm.memory.episodic.segment_text import segment_memory_text

pytestmark = pytest.mark.unit


def test_memory_text_keeps_what_was_heard_beside_the_caption():
    text = segment_memory_text("I am at the café.", "I think I left my blue notebook on the table.")
    assert text == "I am at the café. (heard: I think I left my blue notebook on the table.)"


def test_memory_text_does_not_repeat_a_transcript_the_caption_already_quotes():
    assert segment_memory_text("I heard: Good morning, Emma.", "Good morning, Emma.") == "I heard: Good morning, Emma."


def test_memory_text_of_a_summary_or_silent_window_is_the_caption():
    assert segment_memory_text("Breakfast, then the walk to work.", None) == "Breakfast, then the walk to work."
    assert segment_memory_text(None, "Hello") == "(heard: Hello)"
    assert segment_memory_text(None, None) == ""
