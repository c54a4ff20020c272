"""Who holds a local claim: host, boot, pid and the process's start time, and whether it still runs.

On the local profile every invocation is a process of this machine, so a claim whose process is gone
(killed, crashed, the laptop rebooted) can be taken over at once instead of after the lease. The start
time (clock ticks since boot, /proc/PID/stat field 22) and the boot id tell a reused pid from the
holder. A claim made on another host, or in another pid namespace (another container), cannot be
checked from here and keeps its lease, as on Lambda, where claims record no owner at all.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from worldmm.config import Profile
from worldmm.ingest.settings import IngestSettings

_PROC = Path("/proc")
_BOOT_ID = _PROC / "sys" / "kernel" / "random" / "boot_id"
SEPARATOR = "|"


@dataclass(frozen=True)
class ClaimOwner:
    """One process: host (name and pid namespace), boot id ('' where unknown), pid, start time in clock
    ticks ('' where unknown)."""

    host: str
    boot_id: str
    pid: int
    started: str

    def __str__(self) -> str:
        return SEPARATOR.join((self.host, self.boot_id, str(self.pid), self.started))

    @classmethod
    def parse(cls, text: str) -> ClaimOwner | None:
        """The owner written by `str()`, or None for anything else."""
        parts = text.split(SEPARATOR)
        if len(parts) != 4 or not parts[2].isdigit():
            return None
        return cls(parts[0], parts[1], int(parts[2]), parts[3])


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> str:
    """The process's start time since boot ('' when it has ended, is a zombie, or /proc is not there)."""
    stat = _read(_PROC / str(pid) / "stat")
    # the command name (field 2) may hold spaces and parentheses: the fields after its last ')' are 3..
    fields = stat[stat.rfind(")") + 2 :].split() if stat else []
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return ""
    return fields[19]


@cache
def _host() -> str:
    """The host name and pid namespace: pids of two containers sharing a host name are not comparable."""
    try:
        namespace = os.readlink(_PROC / "self" / "ns" / "pid")  # e.g. 'pid:[4026531836]'
    except OSError:
        namespace = ""
    return f"{socket.gethostname()[:100]}{'/' + namespace if namespace else ''}"


def current_owner() -> ClaimOwner:
    """This process (computed per call: a forked child is a different owner)."""
    pid = os.getpid()
    return ClaimOwner(_host(), _read(_BOOT_ID), pid, _start_ticks(pid))


def owner_for(settings: IngestSettings) -> str | None:
    """The owner a claim made now records: this process on the local profile, none on aws (lease only)."""
    return str(current_owner()) if settings.worldmm_profile == Profile.LOCAL else None


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def owner_gone(text: str | None) -> bool:
    """Whether the process named by a claim's owner has certainly ended (False when it cannot be told)."""
    owner = ClaimOwner.parse(text) if text else None
    if owner is None or owner.host != _host():
        return False
    here = current_owner()
    if owner.boot_id and here.boot_id and owner.boot_id != here.boot_id:
        return True  # the machine rebooted since the claim
    if owner.pid == here.pid:
        return owner.started != here.started
    if owner.started and here.started:  # /proc is readable: compare the start times
        return _start_ticks(owner.pid) != owner.started
    return not _pid_running(owner.pid)
