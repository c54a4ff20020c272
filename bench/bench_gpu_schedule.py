"""A simulated week of a wearer's sessions against the GPU controller: GPU hours billed per hour worn.

    python -m bench.bench_gpu_schedule [--seed 7] [--days 7] [--answering gpu|openai]

The controller is the real `worldmm.gpu.controller.GpuController`; what it controls is simulated with a
discrete-event clock: an EC2 instance (start request → running after `--ec2-start-s`, the worker's HTTP server
up `--boot-s` later, its models loaded `--load-s` after that), the IngestDLQ (windows deferred while the GPU is
down, visible again when the controller releases them or after the consumer's 900 s), the capture buffer
(a window open all through a session), chats. Every session closes a 30 s window every 30 s; each window is
ingested by the worker when it serves, else deferred. The controller runs every minute (the schedule) and one
second after every wake.

Billing: from each start request to its stop request (pending and boot included), at least 60 s a start —
conservative next to EC2's per-second billing of the running state. Always-on baseline: 168 h a week.
Target (issue 24): billed <= 1.3 x hours worn + 15 min per session. Prints one JSON object and writes it to
bench/results/gpu_schedule.json.
"""

from __future__ import annotations

import argparse
import functools
import heapq
import itertools
import json
import logging
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from worldmm.gpu.controller import (
    ControllerPolicy,
    ControllerPorts,
    DeferredSummary,
    GpuController,
    StartRecord,
    WorkerHealth,
    WorkerInstance,
)

ROOT = Path(__file__).resolve().parent.parent
WINDOW_S = 30.0
DLQ_VISIBILITY_S = 900.0
WAKE_LATENCY_S = 1.0  # async invoke → the controller runs
CONSUMER_LATENCY_S = 2.0  # a message made visible → the DLQ consumer has it
ENCODE_S = 3.0  # the worker's time on one window
CHAT_RETRY_S = 180.0  # a wearer told "the GPU worker is starting" asks again this much later
G5_XLARGE_USD_PER_H = 1.006  # us-east-1 on-demand Linux, AWS price list as assumed on 2026-11-25
HOURS_PER_MONTH = 730.0


class Sim:
    """A discrete-event clock: `sleep` runs every event due until the new time (the controller's Clock port)."""

    def __init__(self) -> None:
        self.t = 0.0
        self._queue: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()

    def at(self, t: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (t, next(self._seq), action))

    def run_until(self, t_end: float) -> None:
        while self._queue and self._queue[0][0] <= t_end:
            t, _, action = heapq.heappop(self._queue)
            self.t = max(self.t, t)
            action()
        self.t = max(self.t, t_end)

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.run_until(self.t + seconds)


@dataclass
class SimInstance:
    """The worker's EC2 instance and the worker process on it."""

    sim: Sim
    ec2_start_s: float
    boot_s: float
    load_s: float
    stop_s: float = 30.0
    state: str = "stopped"
    running_at: float | None = None
    last_request: float | None = None
    billed: list[tuple[float, float]] = field(default_factory=list)
    _started_at: float | None = None
    _epoch: int = 0

    def start(self) -> None:
        assert self.state == "stopped", self.state
        self.state, self._started_at, self._epoch = "pending", self.sim.now(), self._epoch + 1
        epoch = self._epoch
        self.sim.at(self.sim.now() + self.ec2_start_s, lambda: self._running(epoch))

    def _running(self, epoch: int) -> None:
        if epoch == self._epoch and self.state == "pending":
            self.state, self.running_at, self.last_request = "running", self.sim.now(), None

    def stop(self) -> None:
        if self.state not in ("pending", "running"):
            return
        assert self._started_at is not None
        self.billed.append((self._started_at, self.sim.now()))
        self.state, self._epoch = "stopping", self._epoch + 1
        epoch = self._epoch
        self.sim.at(self.sim.now() + self.stop_s, lambda: self._stopped(epoch))

    def _stopped(self, epoch: int) -> None:
        if epoch == self._epoch:
            self.state, self.running_at = "stopped", None

    def ready(self) -> bool:
        return self.state == "running" and self.sim.now() >= (self.running_at or 0) + self.boot_s + self.load_s

    def serve(self) -> None:
        self.last_request = self.sim.now() + ENCODE_S

    def close_billing(self) -> None:
        if self.state in ("pending", "running") and self._started_at is not None:
            self.billed.append((self._started_at, self.sim.now()))


class Fleet:
    def __init__(self, instance: SimInstance) -> None:
        self.instance = instance

    def find(self, preferred_id: str | None) -> WorkerInstance | None:
        return WorkerInstance("i-sim", self.instance.state, "10.0.0.1")

    def start(self, instance_id: str) -> None:
        self.instance.start()

    def launch(self) -> WorkerInstance:
        raise AssertionError("the simulated deployment has its worker instance")

    def stop(self, instance_id: str) -> None:
        self.instance.stop()


class Pointer:
    def __init__(self) -> None:
        self.value: str | None = None

    def read(self) -> str | None:
        return self.value

    def write(self, instance_id: str | None) -> None:
        self.value = instance_id


class Probe:
    def __init__(self, instance: SimInstance, sim: Sim) -> None:
        self.instance, self.sim = instance, sim

    def health(self, instance: WorkerInstance) -> WorkerHealth:
        inst, now = self.instance, self.sim.now()
        if inst.state != "running" or now < (inst.running_at or 0) + inst.boot_s:
            return WorkerHealth(False)
        if not inst.ready():
            return WorkerHealth(True, "loading", True, 0.0)
        ready_at = (inst.running_at or 0) + inst.boot_s + inst.load_s
        since = max(ready_at, inst.last_request or 0.0)
        return WorkerHealth(True, "ready", True, max(0.0, now - since), 1 if since > now else 0)


class Control:
    def __init__(self) -> None:
        self.lease: tuple[str, float] | None = None
        self.demand: dict[str, float] = {}
        self.record = StartRecord()

    def acquire_lease(self, owner: str, now: float, ttl_s: float) -> bool:
        if self.lease is not None and self.lease[0] != owner and self.lease[1] >= now:
            return False
        self.lease = (owner, now + ttl_s)
        return True

    def release_lease(self, owner: str) -> None:
        if self.lease is not None and self.lease[0] == owner:
            self.lease = None

    def record_demand(self, reason: str, now: float) -> None:
        self.demand[reason] = now

    def latest_demand(self, reasons: frozenset[str] | None = None) -> float | None:
        times = [t for reason, t in self.demand.items() if reasons is None or reason in reasons]
        return max(times) if times else None

    def start_record(self) -> StartRecord:
        return self.record

    def save_start_record(self, record: StartRecord) -> None:
        self.record = record


@dataclass
class Window:
    session: int
    index: int
    closed_at: float
    first_deferred_at: float | None = None
    done_at: float | None = None
    processed: int = 0


class World:
    """The deployment around the controller: ingest, the DLQ and its consumer, capture, chats."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.sim = Sim()
        self.instance = SimInstance(self.sim, args.ec2_start_s, args.boot_s, args.load_s)
        self.pointer = Pointer()
        self.control = Control()
        self.deferred: dict[tuple[int, int], Window] = {}
        self.sessions: list[tuple[float, float]] = []
        self.windows: list[Window] = []
        self.answering = args.answering
        self.chats = {"answered": 0, "gpu_starting": 0, "given_up": 0}
        world = self

        class Deferred:
            def summary(self) -> DeferredSummary:
                firsts = [w.first_deferred_at for w in world.deferred.values() if w.first_deferred_at is not None]
                return DeferredSummary(len(world.deferred), min(firsts) if firsts else None)

            def release(self) -> int:
                released = list(world.deferred.values())
                for window in released:
                    world.sim.at(world.sim.now() + CONSUMER_LATENCY_S, functools.partial(world.consume, window))
                return len(released)

        class Capture:
            def capture_open(self, now: float) -> bool:
                return any(start <= now < end for start, end in world.sessions)

        ports = ControllerPorts(
            fleet=Fleet(self.instance),
            pointer=self.pointer,
            deferred=Deferred(),
            capture=Capture(),
            control=self.control,
            probe=Probe(self.instance, self.sim),
            clock=self.sim,
        )
        policy = ControllerPolicy(idle_stop_s=args.idle_stop_s, chat_idle_stop_s=args.chat_idle_stop_s)
        self.controller = GpuController(ports, policy)
        self.starts = 0

    def serving(self) -> bool:
        return self.pointer.read() is not None and self.instance.ready()

    def wake(self, reason: str) -> None:
        def run() -> None:
            self.controller.record_demand(reason)
            self.controller.reconcile(reason)

        self.sim.at(self.sim.now() + WAKE_LATENCY_S, run)

    def ingest(self, window: Window) -> None:
        """IngestWindowFunction: the worker serves it, or GpuUnavailableError → the DLQ."""
        if self.serving():
            self._process(window)
            return
        self._defer(window)
        self.wake("ingest")

    def consume(self, window: Window) -> None:
        """IngestDLQConsumer: a visible DLQ message."""
        key = (window.session, window.index)
        if key not in self.deferred:
            return  # already handled (released and consumed, or consumed at its 900 s)
        if self.serving():
            del self.deferred[key]
            self._process(window)
            return
        self._defer(window)
        self.wake("dlq")

    def _defer(self, window: Window) -> None:
        window.first_deferred_at = window.first_deferred_at or self.sim.now()
        self.deferred[(window.session, window.index)] = window
        self.sim.at(self.sim.now() + DLQ_VISIBILITY_S, lambda: self.consume(window))

    def _process(self, window: Window) -> None:
        self.instance.serve()
        window.processed += 1
        window.done_at = self.sim.now() + ENCODE_S

    def chat(self, retries_left: int = 3) -> None:
        if self.serving():
            self.instance.serve()
            self.chats["answered"] += 1
        elif self.answering == "gpu":
            self.chats["gpu_starting"] += 1
            self.wake("chat")
            if retries_left:  # "try again in a few minutes": the wearer asks again
                self.sim.at(self.sim.now() + CHAT_RETRY_S, lambda: self.chat(retries_left - 1))
            else:
                self.chats["given_up"] += 1
        else:
            self.chats["answered"] += 1  # OpenAI answers; visual retrieval degrades without waking the GPU

    def schedule(self, t: float) -> None:
        """The controller's EventBridge schedule: a run every minute from `t`."""

        def run() -> None:
            self.controller.reconcile("schedule")
            self.schedule(t + 60.0)

        self.sim.at(t, run)


def plan_week(world: World, rng: random.Random, days: int) -> None:
    """Three sessions a day (20-90 min) starting in morning / afternoon / evening slots, chats between."""
    day = 86_400.0
    for d in range(days):
        for slot_start in (8 * 3600, 13 * 3600, 18 * 3600):
            start = d * day + slot_start + rng.uniform(0, 2 * 3600)
            minutes = rng.uniform(20, 90)
            end = start + minutes * 60
            session = len(world.sessions)
            world.sessions.append((start, end))
            for index in range(int(minutes * 60 // WINDOW_S)):
                window = Window(session, index, start + (index + 1) * WINDOW_S)
                world.windows.append(window)
                world.sim.at(window.closed_at, functools.partial(world.ingest, window))
        for _ in range(4):  # chats at any waking hour, some near sessions, some far from them
            world.sim.at(d * day + rng.uniform(7 * 3600, 23 * 3600), world.chat)


def run(args: argparse.Namespace) -> dict[str, object]:
    logging.getLogger("worldmm").setLevel(logging.ERROR)
    world = World(args)
    plan_week(world, random.Random(args.seed), args.days)
    world.schedule(0.0)
    end = args.days * 86_400.0
    world.sim.run_until(end)
    world.instance.close_billing()

    worn_h = sum(e - s for s, e in world.sessions) / 3600
    billed_h = sum(max(60.0, b - a) for a, b in world.instance.billed) / 3600
    sessions = len(world.sessions)
    target_h = 1.3 * worn_h + 0.25 * sessions
    first_waits = []
    for session in range(sessions):
        deferred = [w for w in world.windows if w.session == session and w.first_deferred_at is not None]
        if deferred:
            first = min(deferred, key=lambda w: w.first_deferred_at or 0)
            assert first.done_at is not None and first.first_deferred_at is not None
            first_waits.append(first.done_at - first.first_deferred_at)
    start_s = args.ec2_start_s + args.boot_s + args.load_s
    lost = sum(1 for w in world.windows if w.done_at is None)
    duplicated = sum(1 for w in world.windows if w.processed > 1)
    weeks_per_month = HOURS_PER_MONTH / 168
    return {
        "benchmark": "gpu_schedule",
        "simulated": {
            "days": args.days,
            "seed": args.seed,
            "sessions": sessions,
            "windows": len(world.windows),
            "chats": world.chats,
            "answering_provider": args.answering,
            "worker_start_s": start_s,
            "worker_start_parts_s": {"ec2_start": args.ec2_start_s, "boot": args.boot_s, "model_load": args.load_s},
            "idle_stop_s": args.idle_stop_s,
            "chat_idle_stop_s": args.chat_idle_stop_s,
            "chat_retry_s": CHAT_RETRY_S,
        },
        "hours_worn": round(worn_h, 2),
        "gpu_hours_billed": round(billed_h, 2),
        "billed_per_hour_worn": round(billed_h / worn_h, 3),
        "target_hours": round(target_h, 2),
        "meets_target": billed_h <= target_h,
        "always_on_hours": 24.0 * args.days,
        "gpu_starts": len(world.instance.billed),
        "first_window_wait_s": {
            "median": round(statistics.median(first_waits), 1) if first_waits else None,
            "max": round(max(first_waits), 1) if first_waits else None,
            "goal_max": start_s + 120,
        },
        "windows_lost": lost,
        "windows_duplicated": duplicated,
        "monthly_usd": {
            "g5_xlarge_usd_per_h": G5_XLARGE_USD_PER_H,
            "price_as_of": "2026-11-25 (assumed us-east-1 on-demand)",
            "on_demand_controller": round(billed_h / args.days * 7 * weeks_per_month * G5_XLARGE_USD_PER_H, 2),
            "always_on": round(HOURS_PER_MONTH * G5_XLARGE_USD_PER_H, 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--answering", choices=["gpu", "openai"], default="gpu")
    parser.add_argument("--ec2-start-s", type=float, default=40.0)
    parser.add_argument("--boot-s", type=float, default=30.0)
    parser.add_argument("--load-s", type=float, default=80.0)
    parser.add_argument("--idle-stop-s", type=float, default=900.0)
    parser.add_argument("--chat-idle-stop-s", type=float, default=300.0)
    args = parser.parse_args()
    result = run(args)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_schedule.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
