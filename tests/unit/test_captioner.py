"""Captioner: the prompt it sends, and what it does with weak or copied model answers."""

from __future__ import annotations

import json

import pytest

from tests.harness import make_settings
from worldmm.errors import ModelOutputError
from worldmm.ingest.captioner import caption_window, parse_caption
from worldmm.llm.scripted import ScriptedLLM
from worldmm.llm.structured import is_placeholder
from worldmm.memory.episodic.openie import parse_entities

pytestmark = pytest.mark.unit

FRAMES = [f"frame-{i}".encode() for i in range(16)]


def test_captioner_prompt_sends_caption_frames_and_the_transcript():
    # GIVEN 16 sampled frames and a transcript
    llm = ScriptedLLM({"caption": {"caption": "I pour coffee while Katrina talks about milk."}})
    settings = make_settings(caption_frames=4)
    # WHEN the window is captioned
    caption, _ = caption_window(llm, settings, FRAMES, "We are almost out of milk.")
    # THEN 4 evenly spread frames go as image parts, the transcript is in the prompt, the answer is parsed
    request = llm.calls_for("caption")[0]
    parts = request.messages[-1]["content"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(images) == 4 and all(url.startswith("data:image/jpeg;base64,") for url in images)
    assert "We are almost out of milk." in request.prompt_text
    assert request.response_schema is not None and "caption" in request.response_schema["properties"]
    assert caption == "I pour coffee while Katrina talks about milk."


@pytest.mark.parametrize("copied", ["<the description>", "...", "", "  ", "[caption]", "{caption}"])
def test_placeholders_copied_from_a_prompt_are_not_content(copied):
    assert is_placeholder(copied)
    with pytest.raises(ModelOutputError):
        parse_caption(json.dumps({"caption": copied}))


def test_real_text_is_not_a_placeholder():
    assert not is_placeholder("Katrina <roommate> makes coffee")
    assert not is_placeholder("I")


def test_captioner_falls_back_to_the_transcript_when_the_caption_is_a_placeholder():
    llm = ScriptedLLM({"caption": {"caption": "<the description>"}})
    caption, response = caption_window(llm, make_settings(), [], "Good morning, Katrina.")
    assert caption == "I heard: Good morning, Katrina."
    assert response.completion_tokens > 0  # the call is still accounted for


def test_captioner_without_transcript_raises_on_a_placeholder_caption():
    llm = ScriptedLLM({"caption": {"caption": "<the description>"}})
    with pytest.raises(ModelOutputError):
        caption_window(llm, make_settings(), FRAMES, "")


def test_ner_drops_placeholder_entities():
    entities, _ = parse_entities('{"entities": ["<entity>", "Katrina", "..."]}', 10, 100)
    assert entities == ["Katrina"]
