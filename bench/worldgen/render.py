"""Writes a day as a recording directory with the sample recordings' renderer (`scripts/make_sample_session.py`):
espeak-ng speech laid into 30-second windows, Pillow frames, ffmpeg AAC, and the same layout as `examples/*`."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
from collections import Counter
from datetime import timedelta
from functools import cache
from pathlib import Path
from types import ModuleType

from bench.worldgen.days import Day, Window
from bench.worldgen.world import SPEECH_RATE, World

RENDERER = Path(__file__).resolve().parents[2] / "scripts" / "make_sample_session.py"


@cache
def renderer() -> ModuleType:
    """The sample recordings' generator, imported from its file (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("worldgen_sample_renderer", RENDERER)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(RENDERER)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# Where a labelled thing stands in a frame (x, y), by its order in the window.
_SPOTS = ((110, 120), (180, 135), (60, 140))
_BACKDROPS = {"outside": (("sign", 120, 150),), "counter": (("counter", 0, 155),), "paying": (("counter", 0, 155),)}


def scene(window: Window, key: str, world: World) -> object:
    """The renderer's Scene for a window: people standing, the setting's furniture and the things in view."""
    r = renderer()
    shirts = {p.name: p.shirt for p in world.people}
    people = tuple(
        r.Person(name, 200 + 40 * (i % 2) - 80 * (i // 2), shirts.get(name, "#546e7a"))
        for i, name in enumerate(window.people)
    )
    props = []
    if window.setting == "home":
        props += [r.Prop("window", 20, 38, "window"), r.Prop("table", 30, 170, window.place.lower(), color="#a1887f")]
    elif window.setting in ("counter", "paying"):
        props += [r.Prop("board", 8, 38, window.place.upper(), text=()), r.Prop("counter", 0, 160, "counter")]
    elif window.setting == "outside":
        props += [r.Prop("building", 10, 50, "", color="#90a4ae"), r.Prop("sign", 200, 150, window.place)]
    for i, (kind, label) in enumerate(p for p in window.props if p[0] not in ("sign", "counter")):
        x, y = _SPOTS[i % len(_SPOTS)]
        if kind == "phone":
            props.append(r.Prop("phone", x, 60, "my phone", text=("CALLING", label)))
        else:
            props.append(r.Prop("bag", x, y, label, color="#b0bec5"))
    return r.Scene(key, window.place, window.setting, window.note, tuple(window.lines), people, tuple(props))


def write_day(world: World, day: Day, target: Path, media: bool = True) -> None:
    """Writes metadata.json, script.jsonl, questions.jsonl, README.md and (with `media`) audio.m4a and the
    frames of `day` under `target`, in place of an earlier run's."""
    r = renderer()
    target.mkdir(parents=True, exist_ok=True)
    for window_dir in target.glob("window_*"):
        shutil.rmtree(window_dir)
    scenes = [scene(window, f"{day.session_id}-{i}", world) for i, window in enumerate(day.windows)]
    placed = []
    if media:
        painter = r.Painter(day.start)
        for index, item in enumerate(scenes):
            window_dir = target / f"window_{index}"
            window_dir.mkdir()
            for k in range(r.FRAMES_PER_WINDOW):
                (window_dir / f"frame_{k:04d}.jpg").write_bytes(painter.frame(item, index, k))
        voices = {speaker: (voice, SPEECH_RATE) for speaker, voice in day.voices.items()}
        with tempfile.TemporaryDirectory() as tmp:
            placed = r.place_lines(scenes, Path(tmp), voices)
            r.write_audio(placed, len(scenes), target / "audio.m4a", Path(tmp))
    start_ms = int(day.start.timestamp() * 1000)
    metadata = {
        "session_id": day.session_id,
        "window_count": len(scenes),
        "video_start_ms": start_ms,
        "audio_start_ms": start_ms,
        "created_at": day.start.isoformat().replace("+00:00", "Z"),
        "user_hint": f"A {day.start.strftime('%A')} in {world.town}: errands, calls and plans with friends.",
    }
    (target / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n")
    (target / "script.jsonl").write_text(r.script(scenes))
    (target / "questions.jsonl").write_text("".join(json.dumps(q.row()) + "\n" for q in day.questions))
    (target / "README.md").write_text(readme(world, day, placed))


def readme(world: World, day: Day, placed: list[object]) -> str:
    """A short README: where the day comes from, who speaks, the timeline, and how many questions of each kind."""
    said: dict[int, list[str]] = {}
    for line in placed:
        w = line.window  # type: ignore[attr-defined]
        said.setdefault(w, []).append(
            f"**{line.speaker}** ({line.start - w * 30:.1f}–{line.end - w * 30:.1f} s): {line.text}"  # type: ignore[attr-defined]
        )
    people = {p.name: p for p in world.people}
    cast = [f"- **I** — the wearer (`{world.me_voice}`)."]
    for name, voice in day.voices.items():
        if name == "Me":
            continue
        who = f"my {people[name].relation}, {people[name].job}" if name in people else "serves at a shop"
        cast.append(f"- **{name}** — {who} (`{voice}`).")
    out = [
        f"# Generated day `{day.session_id}` ({len(day.windows)} windows, {len(day.windows) / 2:g} minutes)",
        "",
        f"Day {day.number} of the world of seed {world.seed}, made by `python -m bench.worldgen --seed {world.seed}"
        f" --days N` (bench/worldgen: espeak-ng speech, Pillow frames, ffmpeg AAC) — do not edit by hand.",
        f"{day.start.strftime('%A %d %B %Y')}, from {day.start.strftime('%H:%M')} UTC; the same layout as"
        " `examples/next-morning-session` (each line inside its 30-second window). Ask it over a memory that holds"
        " every day of the world: no two days state the same fact about the same thing.",
        "",
        "## Cast (voices: espeak-ng)",
        "",
        *cast,
        "",
        "## Timeline",
        "",
        "| window | clock (UTC) | place | what is said |",
        "|---|---|---|---|",
    ]
    for index, window in enumerate(day.windows):
        at = (day.start + timedelta(seconds=30 * index)).strftime("%H:%M:%S")
        text = " ".join(said.get(index, [f"**{s}**: {t}" for s, t in window.lines]))
        out.append(f"| {index} | {at} | {window.place} ({window.setting}) | {text} |")
    counts = Counter(q.kind for q in day.questions)
    out += ["", f"## Questions (`questions.jsonl`, {len(day.questions)})", ""]
    out += [f"- {kind}: {n}" for kind, n in sorted(counts.items())]
    return "\n".join(out) + "\n"
