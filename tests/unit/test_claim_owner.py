"""A local claim's owner: this process is alive, an ended or reused pid is gone, another host is unknown."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

from worldmm.ingest.claim_owner import ClaimOwner, current_owner, owner_gone


def test_the_current_process_is_not_gone() -> None:
    assert not owner_gone(str(current_owner()))


def test_a_process_that_ended_is_gone() -> None:
    # GIVEN the owner string a child process writes for itself
    child = subprocess.Popen(
        [sys.executable, "-c", "from worldmm.ingest.claim_owner import current_owner as o; print(o(), flush=True);"
         " import time; time.sleep(60)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        owner = ClaimOwner.parse(child.stdout.readline().strip())
        assert owner is not None and owner.pid == child.pid
        # THEN it is not gone while the child runs
        assert not owner_gone(str(owner))
    finally:
        child.kill()
        child.wait()
    # AND it is gone once the child was killed
    assert owner_gone(str(owner))


def test_a_reused_pid_is_told_apart_by_its_start_time() -> None:
    # GIVEN a claim naming this very pid but a different start time (the pid reused after a crash)
    here = current_owner()
    reused = replace(here, started="1") if here.started else None
    if reused is None:  # no /proc: the start time cannot be read, and pid reuse cannot be told
        return
    assert owner_gone(str(reused))


def test_another_boot_of_this_host_is_gone() -> None:
    here = current_owner()
    if not here.boot_id:
        return
    assert owner_gone(str(replace(here, boot_id="another-boot")))


def test_a_claim_of_another_host_or_unreadable_is_never_taken_for_gone() -> None:
    assert not owner_gone(str(replace(current_owner(), host="other-host", pid=999_999_999)))
    assert not owner_gone("not an owner")
    assert not owner_gone(None)
