"""Captioner: the prompt it sends, and what it does with weak or copied model answers."""

from __future__ import annotations

import json

import pytest

from tests.support.harness import make_settings
from worldmm.config import CaptionMode, Settings
from worldmm.errors import ModelOutputError
from worldmm.llm.scripted import ScriptedLLM
from worldmm.llm.structured import is_placeholder
from worldmm.media.captioner import caption_window, parse_caption
from worldmm.media.settings import CaptionSettings
from worldmm.memory.openie import parse_entities

pytestmark = pytest.mark.unit

FRAMES = [f"frame-{i}".encode() for i in range(16)]


def caption_settings(**updates: object) -> CaptionSettings:
    return CaptionSettings.of(make_settings(**updates))


def test_captioner_prompt_sends_caption_frames_and_the_transcript():
    # GIVEN 16 sampled frames and a transcript
    llm = ScriptedLLM({"caption": {"caption": "I pour coffee while Katrina talks about milk."}})
    settings = caption_settings(caption_frames=4)
    # WHEN the window is captioned
    caption = caption_window(llm, settings, FRAMES, "We are almost out of milk.")
    # THEN 4 evenly spread frames go as image parts, the transcript is in the prompt, the answer is parsed
    request = llm.calls_for("caption")[0]
    parts = request.messages[-1]["content"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(images) == 4 and all(url.startswith("data:image/jpeg;base64,") for url in images)
    assert "We are almost out of milk." in request.prompt_text
    assert request.response_schema is not None and "caption" in request.response_schema["properties"]
    assert caption.text == "I pour coffee while Katrina talks about milk."
    assert caption.source == CaptionMode.SEEN


@pytest.mark.parametrize("copied", ["<the description>", "...", "", "  ", "[caption]", "{caption}"])
def test_placeholders_copied_from_a_prompt_are_not_content(copied):
    assert is_placeholder(copied)
    with pytest.raises(ModelOutputError):
        parse_caption(json.dumps({"caption": copied}))


@pytest.mark.parametrize(
    "broken",
    [
        '{"caption": "The images (if any) are frames from one. 30-second window of wha',
        '```json\n{"caption": "I pour',
        "[1, 2",
    ],
)
def test_json_that_does_not_parse_is_refused_even_when_the_server_gave_no_finish_reason(broken):
    # A server that reports no finish reason still cuts answers off: broken JSON is never kept as prose.
    with pytest.raises(ModelOutputError):
        parse_caption(broken)


def test_plain_prose_without_json_is_the_caption():
    assert parse_caption("I pour coffee in the kitchen.") == "I pour coffee in the kitchen."


def test_real_text_is_not_a_placeholder():
    assert not is_placeholder("Katrina <roommate> makes coffee")
    assert not is_placeholder("I")


def test_captioner_falls_back_to_the_transcript_when_the_caption_is_a_placeholder():
    llm = ScriptedLLM({"caption": {"caption": "<the description>"}})
    caption = caption_window(llm, caption_settings(), [], "Good morning, Katrina.")
    assert caption.text == "I heard: Good morning, Katrina."
    assert caption.source == CaptionMode.HEARD  # degraded to what was heard, and the segment says so
    assert caption.response is not None and caption.response.completion_tokens > 0  # the call is accounted for


def test_captioner_without_transcript_raises_on_a_placeholder_caption():
    llm = ScriptedLLM({"caption": {"caption": "<the description>"}})
    with pytest.raises(ModelOutputError):
        caption_window(llm, caption_settings(), FRAMES, "")


def test_ner_drops_placeholder_entities():
    entities, _ = parse_entities('{"entities": ["<entity>", "Katrina", "..."]}', 10, 100)
    assert entities == ["Katrina"]


def test_heard_captions_ask_no_model_and_keep_what_was_heard_verbatim():
    # GIVEN the heard mode (the local profile's default) and a model that would invent a scene
    llm = ScriptedLLM({"caption": {"caption": "The window in which I am standing, with my camera glasses."}})
    settings = caption_settings(caption_mode="heard")
    # WHEN a window with frames and speech is captioned
    caption = caption_window(llm, settings, FRAMES, "  We are almost\nout of milk. ")
    # THEN the caption is what was heard, marked as heard, and no model was asked
    assert caption == caption_window(llm, settings, [], "We are almost out of milk.")
    assert (caption.text, caption.source, caption.response) == (
        "I heard: We are almost out of milk.",
        CaptionMode.HEARD,
        None,
    )
    assert llm.calls_for("caption") == []


def test_heard_caption_of_a_silent_window_is_empty_not_invented():
    llm = ScriptedLLM({"caption": {"caption": "I walk through a sunny park."}})
    caption = caption_window(llm, caption_settings(caption_mode="heard"), FRAMES, "")
    assert (caption.text, caption.source) == ("", CaptionMode.HEARD)
    assert llm.calls == []


def test_tidied_captions_send_no_frames_and_say_so():
    # GIVEN a text model that tidies what was heard
    llm = ScriptedLLM({"caption": {"caption": "Katrina tells me we are almost out of milk."}})
    # WHEN a window with frames is captioned in the tidied mode
    caption = caption_window(llm, caption_settings(caption_mode="tidied"), FRAMES, "We are almost out of milk.")
    # THEN the model gets the transcript and no image, and the caption is marked tidied (nothing was seen)
    request = llm.calls_for("caption")[0]
    assert isinstance(request.messages[-1]["content"], str) or not any(
        p["type"] == "image_url" for p in request.messages[-1]["content"]
    )
    assert "We are almost out of milk." in request.prompt_text
    assert (caption.text, caption.source) == ("Katrina tells me we are almost out of milk.", CaptionMode.TIDIED)
    # AND a tidied window whose transcript is empty asks no model (it would have nothing to work from)
    assert caption_window(llm, caption_settings(caption_mode="tidied"), FRAMES, "").source == CaptionMode.HEARD
    assert len(llm.calls_for("caption")) == 1


def test_seen_caption_without_frames_is_only_tidied():
    llm = ScriptedLLM({"caption": {"caption": "Katrina says the milk is nearly gone."}})
    caption = caption_window(llm, caption_settings(caption_mode="seen"), [], "We are almost out of milk.")
    assert caption.source == CaptionMode.TIDIED


@pytest.mark.parametrize(
    ("profile", "provider", "mode"),
    [
        ("local", "local", CaptionMode.HEARD),  # SmolLM2 sees no frames and invents scenes
        ("aws", "local", CaptionMode.TIDIED),  # another llama.cpp model: text only
        ("local", "openai", CaptionMode.SEEN),
        ("aws", "gpu", CaptionMode.SEEN),
    ],
)
def test_caption_mode_defaults_to_what_the_model_can_do(profile: str, provider: str, mode: CaptionMode) -> None:
    settings = Settings(worldmm_profile=profile, llm_provider=provider)  # type: ignore[arg-type]
    assert settings.caption_mode_effective == mode
    assert Settings(worldmm_profile=profile, llm_provider=provider, caption_mode="tidied").caption_mode_effective == (  # type: ignore[arg-type]
        CaptionMode.TIDIED
    )
