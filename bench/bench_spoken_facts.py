"""Spoken facts, as a phone captures them: a fresh user, fresh speech, a few facts said in passing, then asked.

    python -m bench.bench_spoken_facts [--out bench/results/spoken_facts.json]

Each window's audio is espeak-ng speech (two voices: the wearer and a friend) laid into its own 30-second
`audio.wav`, as the capture API uploads it (no full recording), beside the frames of `examples/short-session`. The
local profile's real models ingest it into a new home and answer through the chat-verbose handler. For every
question the report keeps the answer, whether it states the fact, whether it was refused, and what the
recogniser heard in the windows: a miss is then either a fact never heard (the recogniser) or a fact heard and
not answered (the answer path). The facts are not from any question set the answer code was tuned on.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import subprocess
import tempfile
import wave
from pathlib import Path
from typing import Any

from bench.bench_answers import _heard, fresh_local_home
from bench.report import write_result

ROOT = Path(__file__).resolve().parent.parent
FRAMES_FROM = ROOT / "examples" / "short-session"
WINDOW_S = 30

SPEECH = (  # (espeak-ng voice, what is said) a window
    ("en-us", "Morning. I am heading to the studio now. The wifi password at the studio is tulip forty two orange."),
    ("en-gb", "Hey, it's Priya. Are we still on for dinner? Let's do Friday at eight at the Lotus Garden."),
    ("en-us", "Sure, dinner with Priya on Friday at eight sounds great. I left my umbrella in the blue locker."),
    ("en-us", "Right. I parked the car on level three of the garage, next to the lifts."),
)
QUESTIONS = (  # facts: each must be stated; `a|b` accepts either
    {"id": "wifi", "question": "What is the wifi password at the studio?", "facts": ["tulip", "42|forty"]},
    {"id": "when", "question": "When is dinner with Priya?", "facts": ["friday", "8|eight"]},
    {"id": "where", "question": "Where is dinner with Priya?", "facts": ["lotus"]},
    {"id": "umbrella", "question": "Where did I leave my umbrella?", "facts": ["locker"]},
    {"id": "car", "question": "Where did I park the car?", "facts": ["level 3|level three"]},
    {"id": "unsaid", "question": "What is the door code at the gym?", "refusal": True, "facts": []},
)


def render_session(target: Path) -> Path:
    """A session folder: the short session's frames and metadata, each window's speech as its own audio.wav."""
    shutil.copytree(FRAMES_FROM, target, ignore=shutil.ignore_patterns("audio.*", "README.md", "*.jsonl"))
    for index, (voice, text) in enumerate(SPEECH):
        spoken = target / f"spoken_{index}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(spoken), text], check=True)
        with wave.open(str(spoken)) as source:
            params, frames = source.getparams(), source.readframes(source.getnframes())
        silence = b"\x00" * max(0, params.framerate * WINDOW_S * params.sampwidth - len(frames))
        with wave.open(str(target / f"window_{index}" / "audio.wav"), "wb") as window:
            window.setparams(params)
            window.writeframes(frames + silence)
        spoken.unlink()
    lines = [json.dumps({"kind": "spoken", "answer": "", **q}) for q in QUESTIONS]
    (target / "questions.jsonl").write_text("\n".join(lines) + "\n")
    return target


def run() -> dict[str, Any]:
    """Ingest the rendered session as a fresh user and ask every question once."""
    from worldmm.demo import DEMO_USER, NO_MEMORY, load_questions, local_profile, run_demo

    with tempfile.TemporaryDirectory(prefix="spoken-facts-") as tmp, fresh_local_home("worldmm-spoken-") as (
        home,
        local,
    ):
        session = render_session(Path(tmp) / "session")
        settings = local_profile(home, local)
        with contextlib.redirect_stdout(io.StringIO()):
            asked = run_demo(settings, session, questions=load_questions(session))
        heard = _heard(settings, DEMO_USER)
    rows = [
        {
            "question": a.question,
            "answer": a.answer,
            "right": bool(a.right),
            "refused": a.answer.strip() == NO_MEMORY,
            "fact_heard": all(
                any(option in heard.casefold() for option in fact.split("|")) for fact in a.expected.facts
            )
            if a.expected is not None and not a.expected.refusal
            else None,
            "elapsed_s": round(a.elapsed_s, 2),
        }
        for a in asked
    ]
    return {
        "said": [text for _, text in SPEECH],
        "heard": heard,
        "questions": rows,
        "right": sum(r["right"] for r in rows),
        "asked": len(rows),
        "facts_heard": sum(bool(r["fact_heard"]) for r in rows if r["fact_heard"] is not None),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "spoken_facts.json"))
    args = parser.parse_args(argv)
    write_result(run(), Path(args.out))


if __name__ == "__main__":
    main()
