"""The GPU worker on demand: started when work waits for it, stopped when idle, one controller at a time.

Every run observes — the tagged instance and its state (EC2), the instance id readers follow (SSM), the
windows deferred in the IngestDLQ while the GPU was down, open capture windows, recent demand (a chat that
got `gpu-starting`, an ingest that found the GPU down, an operator), the worker's own `/health` (ready,
trusted by its token proof, idle seconds) — and acts on what it saw, so a run that dies half-way is finished
by the next one:

- work waits → start the stopped instance (or launch one from the launch template when none exists), wait
  for `/health` to say ready from a worker that proves the token, write its id to SSM (healing the "none"
  sentinel), then make the deferred DLQ messages visible now instead of after their next 900 s extension;
- nothing waits, no capture window is open and the worker served nothing for `GPU_IDLE_STOP_S` (or, when
  only chats used it since its start, `GPU_CHAT_IDLE_STOP_S`) → write "none", look again (a window that
  slipped in between aborts the stop and restores the id), stop it.

A lease (a conditional write) lets one run act at a time: 200 windows finding the GPU down at once start
it once. Every transition is a `flow=gpu_controller` log step and a metric.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from aws_lambda_powertools import Logger

from worldmm.errors import ConfigurationError
from worldmm.gpu.settings import GpuSettings
from worldmm.observability import count, milliseconds

logger = Logger(child=True)

FLOW = "gpu_controller"
# Demand that comes from recording (windows, open capture): the worker keeps the longer idle tail after it.
SESSION_REASONS = frozenset({"capture", "ingest", "dlq"})
GONE_STATES = frozenset({"terminated", "shutting-down"})
LIVE_STATES = frozenset({"pending", "running"})
MAX_BACKOFF_S = 3600.0


# --- observed values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerInstance:
    """One EC2 instance carrying the worker tag."""

    instance_id: str
    state: str  # pending | running | stopping | stopped | shutting-down | terminated
    private_ip: str | None = None


@dataclass(frozen=True)
class WorkerHealth:
    """What the worker's `/health` said (or that it could not be asked)."""

    reachable: bool
    status: str = "unreachable"  # loading | ready | failed | unreachable
    trusted: bool = False  # it answered the challenge with the shared token's proof
    idle_s: float | None = None
    in_flight: int = 0

    @property
    def serving(self) -> bool:
        return self.reachable and self.trusted and self.status == "ready"


@dataclass(frozen=True)
class DeferredSummary:
    """DLQ messages waiting for the GPU: how many, and since when the oldest waits."""

    count: int = 0
    oldest_at: float | None = None


@dataclass(frozen=True)
class StartRecord:
    """The controller's memory of its last start: which instance, since when, failures in a row."""

    instance_id: str | None = None
    since: float | None = None
    failures: int = 0
    failed_at: float | None = None


@dataclass(frozen=True)
class Work:
    """What waits for the GPU now."""

    deferred: DeferredSummary
    capture_open: bool
    demand_at: float | None  # the latest demand of any kind (a chat, an operator, a window)

    def waiting(self, now: float, hold_s: float) -> bool:
        """Deferred windows, an open capture window, or demand younger than `hold_s`."""
        recent_demand = self.demand_at is not None and now - self.demand_at < hold_s
        return self.deferred.count > 0 or self.capture_open or recent_demand


@dataclass(frozen=True)
class ControllerOutcome:
    """What one run did (`action`) and what it saw."""

    action: str  # busy | ready | starting | failed | backoff | no_worker | serving | stopped | stop_aborted | idle
    instance_id: str | None = None
    state: str | None = None
    released: int = 0
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "instanceId": self.instance_id,
            "state": self.state,
            "released": self.released,
            **self.detail,
        }


# --- ports -------------------------------------------------------------------------------------------


class WorkerFleet(Protocol):
    """EC2: the tagged worker instance."""

    def find(self, preferred_id: str | None) -> WorkerInstance | None:
        """`preferred_id` when EC2 still knows it (not terminated), else the newest tagged, not terminated."""
        ...

    def start(self, instance_id: str) -> None: ...

    def launch(self) -> WorkerInstance:
        """A new instance from the worker's launch template, tagged."""
        ...

    def stop(self, instance_id: str) -> None: ...


class InstancePointer(Protocol):
    """SSM: the instance id readers (ingest, chat) follow; None reads and writes the "none" sentinel."""

    def read(self) -> str | None: ...

    def write(self, instance_id: str | None) -> None: ...


class DeferredWork(Protocol):
    """The IngestDLQ's messages deferred while the GPU was down."""

    def summary(self) -> DeferredSummary: ...

    def release(self) -> int:
        """Make every deferred message visible now; how many were."""
        ...


class CaptureActivity(Protocol):
    """Whether a capture window is open (a wearer is recording now)."""

    def capture_open(self, now: float) -> bool: ...


class ControlStore(Protocol):
    """The controller's own state: the lease, demand, the last start."""

    def acquire_lease(self, owner: str, now: float, ttl_s: float) -> bool:
        """Take (or renew) the lease unless another owner holds an unexpired one."""
        ...

    def release_lease(self, owner: str) -> None: ...

    def record_demand(self, reason: str, now: float) -> None: ...

    def latest_demand(self, reasons: frozenset[str] | None = None) -> float | None:
        """The latest demand (of these reasons, or of any)."""
        ...

    def start_record(self) -> StartRecord: ...

    def save_start_record(self, record: StartRecord) -> None: ...


class WorkerProbe(Protocol):
    """The worker's `/health`, asked with a fresh challenge."""

    def health(self, instance: WorkerInstance) -> WorkerHealth: ...


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class ControllerPorts:
    fleet: WorkerFleet
    pointer: InstancePointer
    deferred: DeferredWork
    capture: CaptureActivity
    control: ControlStore
    probe: WorkerProbe
    clock: Clock


@dataclass(frozen=True)
class ControllerPolicy:
    """The controller's knobs (its settings' GPU_IDLE_STOP_S, ...)."""

    idle_stop_s: float = 900.0
    chat_idle_stop_s: float = 300.0
    ready_timeout_s: float = 900.0
    wait_s: float = 600.0
    poll_s: float = 5.0
    lease_s: float = 60.0
    failure_backoff_s: float = 600.0

    @classmethod
    def from_settings(cls, settings: GpuSettings) -> ControllerPolicy:
        return cls(
            idle_stop_s=settings.gpu_idle_stop_s,
            chat_idle_stop_s=settings.gpu_chat_idle_stop_s,
            ready_timeout_s=settings.gpu_ready_timeout_s,
            wait_s=settings.gpu_controller_wait_s,
            poll_s=settings.gpu_poll_interval_s,
            lease_s=settings.gpu_lease_s,
            failure_backoff_s=settings.gpu_failure_backoff_s,
        )


def step(name: str, *, level: Literal["info", "warning", "error"] = "info", **fields: Any) -> None:
    """One controller transition: a structured log record (`flow`, `step`, fields) and a count metric."""
    getattr(logger, level)(name, extra={"flow": FLOW, "step": name, **fields})
    count("Gpu" + "".join(part.capitalize() for part in name.removeprefix("gpu_").split("_")))


# --- the controller ----------------------------------------------------------------------------------


class GpuController:
    """Observe, decide, act — under the lease; see the module docstring."""

    def __init__(self, ports: ControllerPorts, policy: ControllerPolicy) -> None:
        self.ports = ports
        self.policy = policy
        self._owner = ""

    # entry points -------------------------------------------------------------------------------------

    def record_demand(self, reason: str) -> None:
        """Note that something waited for the GPU: it counts as waiting work for `chat_idle_stop_s`."""
        self.ports.control.record_demand(reason, self.ports.clock.now())

    def reconcile(self, reason: str = "schedule") -> ControllerOutcome:
        """One run: start, keep or stop the worker from what is observed now."""
        return self._leased(reason, "_reconcile")

    def stop_now(self, reason: str = "operator") -> ControllerOutcome:
        """Stop the worker whatever it is doing (operators); waiting work starts it again on the next run."""
        return self._leased(reason, "_stop_now")

    def status(self) -> dict[str, Any]:
        """What the controller sees, acting on nothing."""
        ports, now = self.ports, self.ports.clock.now()
        pointer_id = ports.pointer.read()
        instance = ports.fleet.find(pointer_id)
        health = ports.probe.health(instance) if instance and instance.state == "running" else None
        work = self._work(now)
        return {
            "instanceId": instance.instance_id if instance else None,
            "state": instance.state if instance else "none",
            "ssm": pointer_id or "none",
            "health": None if health is None else {
                "status": health.status,
                "trusted": health.trusted,
                "idleSeconds": health.idle_s,
                "inFlight": health.in_flight,
            },
            "deferredWindows": work.deferred.count,
            "captureOpen": work.capture_open,
            "demandAgeSeconds": None if work.demand_at is None else round(now - work.demand_at, 1),
            "workWaiting": work.waiting(now, self.policy.chat_idle_stop_s),
        }

    # lease --------------------------------------------------------------------------------------------

    def _leased(self, reason: str, action: str) -> ControllerOutcome:
        owner = uuid.uuid4().hex
        control = self.ports.control
        if not control.acquire_lease(owner, self.ports.clock.now(), self.policy.lease_s):
            step("gpu_controller_busy", reason=reason)
            return ControllerOutcome("busy")
        run = copy.copy(self)  # the lease owner is this run's, not the (shared) controller's
        run._owner = owner
        try:
            outcome: ControllerOutcome = getattr(run, action)(reason)
        except LeaseLostError:
            step("gpu_lease_lost", level="warning", reason=reason)
            return ControllerOutcome("busy")
        finally:
            control.release_lease(owner)
        return outcome

    def _renew(self) -> None:
        if not self.ports.control.acquire_lease(self._owner, self.ports.clock.now(), self.policy.lease_s):
            raise LeaseLostError("another controller took the lease")

    # decisions ----------------------------------------------------------------------------------------

    def _work(self, now: float) -> Work:
        ports = self.ports
        return Work(
            deferred=ports.deferred.summary(),
            capture_open=ports.capture.capture_open(now),
            demand_at=ports.control.latest_demand(),
        )

    def _reconcile(self, reason: str) -> ControllerOutcome:
        ports, now = self.ports, self.ports.clock.now()
        pointer_id = ports.pointer.read()
        instance = ports.fleet.find(pointer_id)
        work = self._work(now)
        if work.deferred.oldest_at is not None:
            milliseconds("GpuWorkWaitMs", (now - work.deferred.oldest_at) * 1000)
        if work.capture_open:
            ports.control.record_demand("capture", now)
        if work.waiting(now, self.policy.chat_idle_stop_s):
            return self._serve(instance, work, reason)
        return self._maybe_stop(instance, pointer_id)

    def _serve(self, instance: WorkerInstance | None, work: Work, reason: str) -> ControllerOutcome:
        ports, now = self.ports, self.ports.clock.now()
        waiting: dict[str, Any] = {
            "reason": reason,
            "deferred": work.deferred.count,
            "capture_open": work.capture_open,
        }
        if instance is None or instance.state in GONE_STATES or instance.state in ("stopped", "stopping"):
            backoff = self._backoff_left(now)
            if backoff > 0:
                step("gpu_start_backoff", level="warning", retry_in_s=round(backoff, 1), **waiting)
                return ControllerOutcome("backoff", instance.instance_id if instance else None)
        if instance is not None and instance.state == "stopping":
            instance = self._await_stopped(instance)
            if instance is None:
                return ControllerOutcome("starting", None, "stopping")
        if instance is None or instance.state in GONE_STATES:
            try:
                instance = ports.fleet.launch()
            except ConfigurationError as exc:  # no launch template: an operator must provide a worker
                step("gpu_no_worker", level="error", error=str(exc), **waiting)
                return ControllerOutcome("no_worker", detail={"why": str(exc)})
            self._save_start(instance.instance_id, now)
            step("gpu_launched", instance_id=instance.instance_id, **waiting)
        elif instance.state == "stopped":
            self._save_start(instance.instance_id, now)
            ports.fleet.start(instance.instance_id)
            step("gpu_start_requested", instance_id=instance.instance_id, **waiting)
        return self._await_ready(instance.instance_id)

    def _await_stopped(self, instance: WorkerInstance) -> WorkerInstance | None:
        """EC2 starts a stopping instance only once it has stopped: wait for that within this run."""
        ports = self.ports
        deadline = ports.clock.now() + self.policy.wait_s
        while ports.clock.now() < deadline:
            ports.clock.sleep(self.policy.poll_s)
            self._renew()
            found = ports.fleet.find(instance.instance_id)
            if found is None or found.state != "stopping":
                return found
        return None

    def _await_ready(self, instance_id: str) -> ControllerOutcome:
        ports, policy = self.ports, self.policy
        record = ports.control.start_record()
        started = record.since if record.instance_id == instance_id and record.since is not None else None
        if started is None:  # a worker this controller did not start (adopted, or a crashed run's)
            started = ports.clock.now()
            self._save_start(instance_id, started)
        deadline = ports.clock.now() + policy.wait_s
        published = ports.pointer.read() == instance_id
        while True:
            instance = ports.fleet.find(instance_id)
            if instance is None or instance.instance_id != instance_id or instance.state not in LIVE_STATES:
                step("gpu_start_interrupted", level="warning", instance_id=instance_id)
                return ControllerOutcome("starting", instance_id, instance.state if instance else "missing")
            health = ports.probe.health(instance) if instance.state == "running" else WorkerHealth(False)
            if health.serving:
                return self._ready(instance, started)
            now = ports.clock.now()
            if published:  # it was ready and stopped answering: readers stop sending it work; it gets
                # GPU_READY_TIMEOUT_S from now to recover before it counts as a failed start
                ports.pointer.write(None)
                published, started = False, now
                self._save_start(instance_id, now)
                step("gpu_worker_lost", level="warning", instance_id=instance_id, health=health.status)
            if health.status == "failed" or (health.reachable and not health.trusted):
                why = "untrusted" if health.status != "failed" else "model load failed"
                return self._failed(instance, why)
            if now - started >= policy.ready_timeout_s:
                return self._failed(instance, f"not ready {round(now - started)} s after its start")
            if now >= deadline:
                step("gpu_still_starting", instance_id=instance_id, state=instance.state, health=health.status)
                return ControllerOutcome("starting", instance_id, instance.state)
            ports.clock.sleep(policy.poll_s)
            self._renew()

    def _ready(self, instance: WorkerInstance, started: float) -> ControllerOutcome:
        ports, now = self.ports, self.ports.clock.now()
        healed = ports.pointer.read() != instance.instance_id
        if healed:
            ports.pointer.write(instance.instance_id)  # readers follow it from now on
            step("gpu_ready", instance_id=instance.instance_id, start_s=round(now - started, 1))
            milliseconds("GpuStartMs", (now - started) * 1000)
        released = ports.deferred.release()
        if released:
            step("gpu_deferred_released", instance_id=instance.instance_id, released=released)
        record = ports.control.start_record()
        if record.failures:
            ports.control.save_start_record(StartRecord(instance.instance_id, started))
        return ControllerOutcome("ready", instance.instance_id, instance.state, released)

    def _failed(self, instance: WorkerInstance, why: str) -> ControllerOutcome:
        ports, now = self.ports, self.ports.clock.now()
        if ports.pointer.read() == instance.instance_id:
            ports.pointer.write(None)
        ports.fleet.stop(instance.instance_id)
        record = ports.control.start_record()
        failures = record.failures + 1
        ports.control.save_start_record(StartRecord(instance.instance_id, record.since, failures, now))
        step("gpu_health_failed", level="error", instance_id=instance.instance_id, why=why, failures=failures)
        return ControllerOutcome("failed", instance.instance_id, "stopping", detail={"why": why})

    def _backoff_left(self, now: float) -> float:
        record = self.ports.control.start_record()
        if not record.failures or record.failed_at is None:
            return 0.0
        wait = min(self.policy.failure_backoff_s * 2 ** (record.failures - 1), MAX_BACKOFF_S)
        return max(0.0, record.failed_at + wait - now)

    def _save_start(self, instance_id: str | None, since: float) -> None:
        record = self.ports.control.start_record()
        self.ports.control.save_start_record(StartRecord(instance_id, since, record.failures, record.failed_at))

    def _maybe_stop(self, instance: WorkerInstance | None, pointer_id: str | None) -> ControllerOutcome:
        ports, policy = self.ports, self.policy
        if instance is None or instance.state not in LIVE_STATES:
            if pointer_id is not None:  # SSM names a worker that is not running: readers should see "none"
                ports.pointer.write(None)
                step("gpu_pointer_cleared", instance_id=pointer_id)
            return _idle_outcome(instance)
        if instance.state == "pending":
            return ControllerOutcome("starting", instance.instance_id, "pending")
        health = ports.probe.health(instance)
        if not self._idle(instance, health):
            detail = {"idle_s": health.idle_s}
            return ControllerOutcome("serving", instance.instance_id, "running", detail=detail)
        ports.pointer.write(None)  # new work finds the GPU down from here on, and wakes the controller
        step("gpu_stop_begin", instance_id=instance.instance_id, idle_s=health.idle_s)
        now = ports.clock.now()
        again = ports.probe.health(instance)
        if self._work(now).waiting(now, policy.chat_idle_stop_s) or not self._idle(instance, again):
            ports.pointer.write(instance.instance_id)
            step("gpu_stop_aborted", instance_id=instance.instance_id)
            return ControllerOutcome("stop_aborted", instance.instance_id, "running")
        ports.fleet.stop(instance.instance_id)
        step("gpu_stopped", instance_id=instance.instance_id, idle_s=again.idle_s)
        return ControllerOutcome("stopped", instance.instance_id, "stopping")

    def _idle_threshold(self) -> float:
        """`idle_stop_s` once recording (windows, capture) used this start of the worker — a wearer may go on
        recording; `chat_idle_stop_s` when only chats (or an operator) did — a chat's retry comes within minutes."""
        record = self.ports.control.start_record()
        session_at = self.ports.control.latest_demand(SESSION_REASONS)
        since = record.since if record.since is not None else float("-inf")
        used_by_recording = session_at is not None and session_at >= since - self.policy.idle_stop_s
        return self.policy.idle_stop_s if used_by_recording else self.policy.chat_idle_stop_s

    def _idle(self, instance: WorkerInstance, health: WorkerHealth) -> bool:
        """Served nothing for its idle threshold, or (unreachable / untrusted) not ready long after its start."""
        if health.reachable and health.trusted:
            return health.in_flight == 0 and (health.idle_s or 0.0) >= self._idle_threshold()
        record = self.ports.control.start_record()
        since = record.since if record.instance_id == instance.instance_id and record.since else None
        return since is None or self.ports.clock.now() - since >= self.policy.ready_timeout_s

    def _stop_now(self, reason: str) -> ControllerOutcome:
        ports = self.ports
        pointer_id = ports.pointer.read()
        instance = ports.fleet.find(pointer_id)
        if pointer_id is not None:
            ports.pointer.write(None)
        if instance is None or instance.state not in LIVE_STATES:
            return _idle_outcome(instance)
        ports.fleet.stop(instance.instance_id)
        step("gpu_stopped", instance_id=instance.instance_id, reason=reason)
        return ControllerOutcome("stopped", instance.instance_id, "stopping")


def _idle_outcome(instance: WorkerInstance | None) -> ControllerOutcome:
    return ControllerOutcome("idle", instance.instance_id if instance else None, instance.state if instance else None)


class LeaseLostError(RuntimeError):
    """This run's lease expired and another run took it: it stops acting at once."""
