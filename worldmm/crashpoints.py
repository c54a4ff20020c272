"""Named crash points for the crash harness (`python -m bench.crash`): SIGKILL this process at a step.

`crash_point("name")` does nothing unless a harness armed it in the process: `arm("name", hit)` kills
the process the `hit`-th time that point is reached, as a power cut or the OOM killer would (no `finally`,
no flush). `trace(path)` appends each point reached to a
file instead, which is how the harness learns a write path's steps. Unarmed, a point costs one global
look-up. The ingest flow's structured log steps (worldmm.ingest.steplog) are crash points too.
"""

from __future__ import annotations

import os
import signal

_armed: tuple[str, int] | None = None
_trace: str | None = None
_hits: dict[str, int] = {}


def arm(name: str, hit: int = 1) -> None:
    """Kill this process the `hit`-th time `name` is reached."""
    global _armed
    _armed = (name, hit)
    _hits.clear()


def trace(path: str | None) -> None:
    """Append every point reached to the file `path` (None: stop)."""
    global _trace
    _trace = path
    _hits.clear()


def crash_point(name: str) -> None:
    """A step of a write path: where the harness may kill the process."""
    if _armed is None and _trace is None:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _trace is not None:
        with open(_trace, "a", encoding="utf-8") as out:
            out.write(f"{name}\n")
    if _armed is not None and _armed == (name, _hits[name]):
        os.kill(os.getpid(), signal.SIGKILL)
