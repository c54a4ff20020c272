"""Command line: `python -m bench.worldgen --seed N --days 3 --out DIR` writes DIR/day-1 ... DIR/day-N."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from bench.worldgen.days import make_days
from bench.worldgen.render import write_day


def main(argv: list[str] | None = None) -> int:
    """Generate the days of a seeded world as recording directories (one per day) and a world.json."""
    parser = argparse.ArgumentParser(prog="python -m bench.worldgen", description=main.__doc__)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-media", action="store_true", help="scripts and questions only (no audio, no frames)")
    args = parser.parse_args(argv)
    if not args.no_media:
        for tool in ("espeak-ng", "ffmpeg"):
            if shutil.which(tool) is None:
                print(f"{tool} is not installed: apt-get install -y espeak-ng ffmpeg", file=sys.stderr)
                return 2
    world, days = make_days(args.seed, args.days)
    args.out.mkdir(parents=True, exist_ok=True)
    summary = []
    for day in days:
        started = time.perf_counter()
        target = args.out / f"day-{day.number}"
        write_day(world, day, target, media=not args.no_media)
        summary.append(
            {
                "day": day.number,
                "session_id": day.session_id,
                "windows": len(day.windows),
                "questions": len(day.questions),
                "unanswerable": sum(q.refusal for q in day.questions),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
        print(json.dumps(summary[-1]), flush=True)
    people = [
        {"name": p.name, "relation": p.relation, "job": p.job, "voice": p.voice, "gender": p.gender}
        for p in world.people
    ]
    (args.out / "world.json").write_text(
        json.dumps({"seed": world.seed, "town": world.town, "me_voice": world.me_voice, "people": people}, indent=2)
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
