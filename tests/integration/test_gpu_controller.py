"""The GPU worker on demand (moto EC2/SSM/SQS/DynamoDB, the real gpu_worker app on 127.0.0.1, simulated time).

Windows run through the real handlers: IngestWindowFunction (its failure lands in the DLQ as Lambda's
OnFailure writes it), IngestDLQConsumer, GpuControllerFunction. Their visual encoder is the zero-latency
stub of the ingest tests; the GPU gate is real discovery (SSM + EC2 state). Nothing dials moto's 10.x addresses.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import boto3
import httpx
import pytest

from tests.support.gpu_controller import (
    BootingWorker,
    SimClock,
    aws_world,
    controller_for,
    on_failure_record,
    serve_worker,
    sqs_event,
    wait_status,
)
from tests.support.gpu_worker import TOKEN, build_tiny_qwen2vl, worker_settings
from tests.support.harness import make_settings
from tests.support.ingest import (
    SESSION,
    USER,
    lambda_context,
    make_ingest_services,
    put_window,
    script_window_models,
    visual_of,
    window_segment,
)
from worldmm.capture.models import CaptureSession, UploadKind
from worldmm.config import Profile
from worldmm.db.models import ProcessingStatus
from worldmm.gpu.aws import DynamoControlStore, HttpWorkerProbe
from worldmm.gpu.controller import WorkerInstance
from worldmm.gpu.demand import ControllerDemand
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.services import set_services
from worldmm.worker_signing import WorkerSigner

pytestmark = pytest.mark.integration

BOOT_S = 120.0  # simulated: EC2 start + model load until /health says ready
CONTROLLER = "GpuControllerFunction"


@pytest.fixture(scope="module")
def clock() -> SimClock:
    return SimClock()


@pytest.fixture(scope="module")
def worker_url(tmp_path_factory, clock):
    """The real worker (tiny Qwen2-VL on CPU), its idleness measured by the simulated clock."""
    from gpu_worker.app import create_app

    model_dir = build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-qwen2vl"))
    with serve_worker(create_app(worker_settings(model_dir), clock=clock.now)) as url:
        wait_status(url, "ready")
        yield url


@pytest.fixture(scope="module")
def failing_worker_url(tmp_path_factory, clock):
    """A worker whose model load fails (its weights directory is missing)."""
    from gpu_worker.app import create_app

    missing = tmp_path_factory.mktemp("no-weights") / "missing"
    with serve_worker(create_app(worker_settings(missing), clock=clock.now)) as url:
        wait_status(url, "failed")
        yield url


class Deployment:
    """One deployment's functions run in-process on moto: ingest, the DLQ consumer, the controller."""

    def __init__(self, settings, db, llm, tmp_path, clock: SimClock, worker: Any) -> None:
        self.world = aws_world(
            settings.model_copy(
                update={
                    "worldmm_profile": Profile.AWS,
                    "gpu_worker_url": None,
                    "gpu_worker_token": TOKEN,
                    "ingest_requires_gpu": True,
                    "gpu_launch_template": "worldmm-gpu-worker",
                }
            )
        )
        self.clock = clock
        self.worker = worker
        self.invoker = InProcessInvoker()
        script_window_models(llm)
        base = make_ingest_services(self.world.settings, db, llm, tmp_path / "objects", invoker=self.invoker)
        self.controller = controller_for(self.world, clock, lambda: self.worker())
        self.control = DynamoControlStore(self.world.settings.gpu_control_table, self.world.dynamodb)
        self.services = base.replace(gpu_demand=self.demand(), gpu_controller=self.controller)
        self.world.capture.create_session(
            CaptureSession(session_id=SESSION, user_id=USER, created_at="2026-05-01T10:00:00+00:00")
        )
        self.controller_runs = 0
        set_services(self.services)

    def demand(self) -> ControllerDemand:
        """A process's wake/defer port (each Lambda container has its own debounce)."""
        return ControllerDemand(self.control, self.invoker, CONTROLLER, clock=self.clock.now)

    def record_windows(self, indices: range) -> None:
        for index in indices:
            put_window(self.services.store, index=index, frames=4)

    def ingest(self, index: int) -> None:
        """Lambda's async invoke of IngestWindowFunction: a failure goes to the DLQ (OnFailure destination)."""
        from handlers.events.ingest_window import lambda_handler

        event = {"sessionId": SESSION, "userId": USER, "windowIndex": index, "frameCount": 4}
        try:
            lambda_handler(event, lambda_context())
        except Exception:
            body = json.dumps(on_failure_record(event))
            self.world.sqs.send_message(QueueUrl=self.world.queue_url, MessageBody=body)

    def consume_dlq(self, max_rounds: int = 50) -> int:
        """The DLQ event source mapping: receive what is visible, run the consumer, delete what succeeded."""
        from handlers.events.ingest_window import sqs_handler

        handled = 0
        for _ in range(max_rounds):
            messages = self.world.sqs.receive_message(
                QueueUrl=self.world.queue_url, MaxNumberOfMessages=1, VisibilityTimeout=300
            ).get("Messages")
            if not messages:
                break
            out = sqs_handler(sqs_event(messages), lambda_context())
            if not out["batchItemFailures"]:
                self.world.sqs.delete_message(QueueUrl=self.world.queue_url, ReceiptHandle=messages[0]["ReceiptHandle"])
                handled += 1
        return handled

    def run_controller_invokes(self) -> list[dict[str, Any]]:
        """Run the controller for each async invoke not yet run (what Lambda does with them)."""
        from handlers.events.gpu_controller import lambda_handler

        pending = [p for name, p in self.invoker.invocations if name == CONTROLLER][self.controller_runs :]
        self.controller_runs += len(pending)
        return [lambda_handler(payload, lambda_context()) for payload in pending]

    def scheduled_run(self) -> dict[str, Any]:
        from handlers.events.gpu_controller import lambda_handler

        return lambda_handler({"source": "aws.scheduler"}, lambda_context())

    def statuses(self, db, indices: range) -> list[ProcessingStatus | None]:
        return [(seg.processing_status if (seg := window_segment(db, index=i)) else None) for i in indices]


@pytest.fixture
def deployment(aws, settings, db, scripted_llm, tmp_path, clock, worker_url):
    deployment = Deployment(settings, db, scripted_llm, tmp_path, clock, None)
    deployment.worker = BootingWorker(clock, deployment.world, worker_url, BOOT_S)
    yield deployment
    set_services(None)


def steps(caplog, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "step", None) == name]


def test_gpu_controller_a_session_recorded_while_the_gpu_is_off_completes_every_window_once(deployment, db, caplog):
    # GIVEN a deployment at rest: the tagged worker stopped, SSM "none"
    world, clock = deployment.world, deployment.clock
    instance_id = world.launch_stopped_worker()
    windows = range(5)
    deployment.record_windows(windows)
    # WHEN a session's windows arrive while the GPU is off
    with caplog.at_level(logging.INFO):
        first_failure = clock.now()
        for index in windows:
            deployment.ingest(index)
        assert world.dlq_depth() == 5 and deployment.statuses(db, windows) == [ProcessingStatus.PENDING] * 5
        deployment.consume_dlq()  # each is deferred (hidden 900 s) and registered for the controller
        assert world.dlq_depth() == 5
        # THEN the wakes start the stopped instance once, and once /health is ready its id is in SSM
        outcomes = deployment.run_controller_invokes()
        assert outcomes[0]["action"] == "ready" and outcomes[0]["released"] == 5
        assert all(o["action"] == "ready" for o in outcomes)  # later wakes find it ready
        assert world.ssm_value() == instance_id and world.instance_state(instance_id) == "running"
        # AND the deferred windows run now, not after their 900 s: every window complete, the DLQ empty
        assert deployment.consume_dlq() == 5
    assert deployment.statuses(db, windows) == [ProcessingStatus.COMPLETE] * 5
    assert world.dlq_depth() == 0 and deployment.control.deferred() == []
    assert visual_of(deployment.services).calls == [4] * 5  # each window encoded once: none ingested twice
    assert len(steps(caplog, "gpu_start_requested")) == 1 and not steps(caplog, "gpu_launched")
    # AND the first window waited the worker's start plus the controller's polling: within start + 2 min
    assert clock.now() - first_failure <= BOOT_S + 120
    # (the windows' encodes reach the worker: here the stub encoded them, so one request stands for them)
    touch = httpx.post(f"{deployment.worker.url}/encode-text", json={"text": "x"}, auth=WorkerSigner(lambda: TOKEN))
    assert touch.status_code == 200
    # WHEN nothing is served for GPU_IDLE_STOP_S THEN the scheduled run stops it and writes "none"
    clock.advance(world.settings.gpu_idle_stop_s - 60)
    assert deployment.scheduled_run()["action"] == "serving"
    clock.advance(61)
    assert deployment.scheduled_run()["action"] == "stopped"
    assert world.ssm_value() == "none" and world.instance_state(instance_id) in {"stopping", "stopped"}


def test_gpu_controller_launches_from_the_launch_template_when_no_worker_exists(deployment, caplog):
    # GIVEN no tagged instance at all and a chat that got gpu-starting
    world = deployment.world
    with caplog.at_level(logging.INFO):
        outcome = deployment.services.gpu_controller
        outcome.record_demand("chat")
        result = outcome.reconcile("chat")
    # THEN one instance is launched from the template, tagged, and named in SSM once ready
    instances = world.tagged_instances()
    assert result.action == "ready" and len(instances) == 1
    assert instances[0]["InstanceType"] == "g5.xlarge"
    assert world.ssm_value() == instances[0]["InstanceId"]
    assert len(steps(caplog, "gpu_launched")) == 1


def test_gpu_controller_200_windows_at_once_start_the_gpu_once(deployment, db, caplog):
    # GIVEN the worker stopped and 200 windows finding it down at once, each from its own container
    world, clock = deployment.world, deployment.clock
    instance_id = world.launch_stopped_worker()
    windows = range(200)
    deployment.record_windows(windows)
    for index in windows:
        set_services(deployment.services.replace(gpu_demand=deployment.demand()))
        deployment.ingest(index)
    set_services(deployment.services)
    wakes = [p for name, p in deployment.invoker.invocations if name == CONTROLLER]
    assert len(wakes) == 200
    # WHEN the 200 controller invocations run while the first is still waiting for /health
    from handlers.events.gpu_controller import lambda_handler

    others: list[dict[str, Any]] = []
    clock.on_sleep.append(lambda: others.extend(lambda_handler(p, lambda_context()) for p in wakes[1:]))
    with caplog.at_level(logging.INFO):
        first = lambda_handler(wakes[0], lambda_context())
    # THEN one started it; the 199 others found the lease held and did nothing
    assert first["action"] == "ready"
    assert [o["action"] for o in others] == ["busy"] * 199
    assert len(steps(caplog, "gpu_start_requested")) == 1 and not steps(caplog, "gpu_launched")
    assert len(world.tagged_instances()) == 1 and world.ssm_value() == instance_id
    assert world.dlq_depth() == 200  # every window waits in the DLQ: nothing lost
    assert sum(s == ProcessingStatus.PENDING for s in deployment.statuses(db, range(0, 200, 20))) == 10


def test_gpu_controller_crash_mid_start_is_finished_by_the_next_run(deployment, db, caplog):
    # GIVEN a controller run that started the instance and died holding the lease (a Lambda timeout)
    world, clock = deployment.world, deployment.clock
    instance_id = world.launch_stopped_worker()
    windows = range(3)
    deployment.record_windows(windows)
    for index in windows:
        deployment.ingest(index)
    deployment.consume_dlq()
    deployment.control.acquire_lease("crashed-run", clock.now(), world.settings.gpu_lease_s)
    world.ec2.start_instances(InstanceIds=[instance_id])
    # WHEN the next run comes while the dead lease is live THEN it does nothing
    assert deployment.scheduled_run()["action"] == "busy"
    assert world.ssm_value() == "none"
    # WHEN the lease has expired THEN a run adopts the started instance, waits for ready, heals SSM, releases
    clock.advance(world.settings.gpu_lease_s + 1)
    with caplog.at_level(logging.INFO):
        outcome = deployment.scheduled_run()
    assert outcome["action"] == "ready" and outcome["released"] == 3
    assert world.ssm_value() == instance_id and not steps(caplog, "gpu_start_requested")
    deployment.consume_dlq()
    assert deployment.statuses(db, windows) == [ProcessingStatus.COMPLETE] * 3
    assert world.dlq_depth() == 0 and visual_of(deployment.services).calls == [4] * 3


def test_gpu_controller_instance_failing_health_is_stopped_and_its_windows_wait(
    deployment, db, caplog, failing_worker_url, worker_url
):
    # GIVEN windows deferred while the GPU is off, and a worker whose model load fails
    world, clock = deployment.world, deployment.clock
    instance_id = world.launch_stopped_worker()
    deployment.worker = BootingWorker(clock, world, failing_worker_url, BOOT_S)
    windows = range(3)
    deployment.record_windows(windows)
    for index in windows:
        deployment.ingest(index)
    deployment.consume_dlq()
    # WHEN the controller starts it THEN health says failed: stopped, SSM stays "none", nothing is lost
    with caplog.at_level(logging.INFO):
        assert deployment.run_controller_invokes()[0]["action"] == "failed"
    assert world.ssm_value() == "none" and world.instance_state(instance_id) in {"stopping", "stopped"}
    assert steps(caplog, "gpu_health_failed")[0].why == "model load failed"
    assert world.dlq_depth() == 3 and deployment.statuses(db, windows) == [ProcessingStatus.PENDING] * 3
    # AND the next run within the back-off does not start it again
    assert deployment.scheduled_run()["action"] == "backoff"
    # WHEN the worker is fixed and the back-off passed THEN it starts, and every window completes once
    deployment.worker = BootingWorker(clock, world, worker_url, BOOT_S)
    clock.advance(world.settings.gpu_failure_backoff_s + 1)
    assert deployment.scheduled_run()["action"] == "ready"
    deployment.consume_dlq()
    assert deployment.statuses(db, windows) == [ProcessingStatus.COMPLETE] * 3
    assert world.dlq_depth() == 0 and visual_of(deployment.services).calls == [4] * 3


def test_gpu_controller_stop_racing_a_new_session_aborts_and_loses_nothing(deployment, db, caplog):
    # GIVEN a running, ready, idle worker named in SSM
    world, clock = deployment.world, deployment.clock
    instance_id = world.launch_stopped_worker()
    deployment.services.gpu_controller.record_demand("operator")
    assert deployment.scheduled_run()["action"] == "ready"
    clock.advance(world.settings.gpu_idle_stop_s + 1)
    deployment.record_windows(range(1))
    # WHEN, after the stop wrote "none", a new session's first window opens and is ingested
    probe = deployment.controller.ports.probe
    original = probe.url_for

    def window_arrives_during_stop(instance: WorkerInstance) -> str | None:
        if world.ssm_value() == "none" and not deployment.statuses(db, range(1))[0]:
            world.capture.record_open_upload(USER, SESSION, 0, UploadKind.FRAME, 0, clock.now())
            deployment.ingest(0)  # finds the GPU down: the DLQ holds it
        return original(instance)

    probe.url_for = window_arrives_during_stop  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO):
        outcome = deployment.scheduled_run()
    # THEN the stop is aborted and SSM names the worker again; the window deferred meanwhile completes once
    assert outcome["action"] == "stop_aborted" and steps(caplog, "gpu_stop_aborted")
    assert world.ssm_value() == instance_id and world.instance_state(instance_id) == "running"
    deployment.consume_dlq()
    assert deployment.scheduled_run()["action"] == "ready"  # a window is open: work waits, it stays
    deployment.consume_dlq()
    assert deployment.statuses(db, range(1)) == [ProcessingStatus.COMPLETE]
    assert world.dlq_depth() == 0 and visual_of(deployment.services).calls == [4]


def test_gpu_controller_trusts_only_a_worker_that_proves_the_token(deployment, worker_url):
    # GIVEN the real worker holding TOKEN
    instance = WorkerInstance("i-1", "running", "10.0.0.1")
    good = HttpWorkerProbe(deployment.world.settings, url_for=lambda _: worker_url)
    wrong = HttpWorkerProbe(
        deployment.world.settings.model_copy(update={"gpu_worker_token": "another-secret"}),
        url_for=lambda _: worker_url,
    )
    # THEN the probe with the same token trusts it; one with another token does not (the worker is not its own)
    assert good.health(instance).serving
    assert wrong.health(instance).status == "ready" and not wrong.health(instance).serving


def test_gpu_controller_reads_the_worker_key_from_its_own_secret_at_run_time(aws, worker_url):
    # GIVEN the key only in the worker-key secret (the template gives the controller its ARN, not its value)
    name = f"worldmm/worker-key-{uuid.uuid4().hex[:8]}"
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name=name, SecretString=TOKEN)
    settings = make_settings(worldmm_profile=Profile.AWS, gpu_worker_token_secret_arn=name, gpu_worker_token=None)
    # WHEN the controller's probe asks the real worker THEN it trusts it with the key read at run time
    probe = HttpWorkerProbe(settings, url_for=lambda _: worker_url)
    assert settings.gpu_worker_key() == TOKEN
    assert probe.health(WorkerInstance("i-1", "running", "10.0.0.1")).serving


def test_gpu_controller_worker_idleness_resets_on_a_model_request(worker_url, clock):
    # GIVEN the worker idle for a while (simulated)
    clock.advance(1000)
    assert httpx.get(f"{worker_url}/health").json()["idle_s"] >= 1000
    # WHEN it serves a request THEN /health reports it idle for 0 s since that request
    answer = httpx.post(f"{worker_url}/encode-text", json={"text": "a dog"}, auth=WorkerSigner(lambda: TOKEN))
    assert answer.status_code == 200
    body = httpx.get(f"{worker_url}/health").json()
    assert body["idle_s"] == 0 and body["last_request_at"] == clock.now() and body["requests_served"] >= 1


def test_gpu_controller_a_chat_that_got_gpu_starting_starts_the_gpu_which_stops_sooner_after_chats_only(
    deployment, db, scripted_llm
):
    from worldmm.chat.service import GPU_STARTING_ANSWER, handle_chat
    from worldmm.config import LLMProvider
    from worldmm.services import Services

    # GIVEN the worker stopped and chat answered by the GPU worker
    world, clock = deployment.world, deployment.clock
    instance_id = world.launch_stopped_worker()
    chat_settings = world.settings.model_copy(update={"llm_provider": LLMProvider.GPU})
    chat_services = Services(chat_settings, db=db, llm=scripted_llm, gpu_demand=deployment.demand())
    # WHEN a question comes THEN it is told the GPU is starting, and the controller is woken for it
    assert handle_chat(chat_services, USER, "what did I drink?").answer == GPU_STARTING_ANSWER
    assert [p for _, p in deployment.invoker.invocations] == [{"action": "reconcile", "reason": "chat"}]
    assert deployment.run_controller_invokes()[0]["action"] == "ready"
    assert world.ssm_value() == instance_id
    # AND with only chats since its start, it stops after GPU_CHAT_IDLE_STOP_S rather than GPU_IDLE_STOP_S
    clock.advance(world.settings.gpu_chat_idle_stop_s + 1)
    assert deployment.scheduled_run()["action"] == "stopped"
    assert world.ssm_value() == "none"


def test_gpu_controller_operator_cli_status_start_stop(deployment, capsys):
    from worldmm.cli import main

    # GIVEN the worker stopped
    world = deployment.world
    instance_id = world.launch_stopped_worker()

    def cli(action: str) -> dict[str, Any]:
        assert main(["gpu", action, "--in-process"]) == 0
        return dict(json.loads(capsys.readouterr().out))

    # THEN status says so, start brings it up ready (SSM names it), stop writes "none" and stops it
    assert cli("status")["state"] == "stopped" and cli("status")["ssm"] == "none"
    assert cli("start")["action"] == "ready" and world.ssm_value() == instance_id
    status = cli("status")
    assert status["state"] == "running" and status["health"]["trusted"] and status["health"]["status"] == "ready"
    assert cli("stop")["action"] == "stopped"
    assert world.ssm_value() == "none" and world.instance_state(instance_id) in {"stopping", "stopped"}


def test_gpu_controller_a_ready_worker_that_stops_answering_is_unpublished_then_published_again(
    deployment, worker_url, caplog
):
    # GIVEN a ready worker named in SSM while a session records (a capture window is open)
    world, clock = deployment.world, deployment.clock
    instance_id = world.launch_stopped_worker()
    world.capture.record_open_upload(USER, SESSION, 0, UploadKind.FRAME, 0, clock.now())
    assert deployment.scheduled_run()["action"] == "ready"
    # WHEN it stops answering THEN readers are sent elsewhere ("none"), and it is not stopped yet
    deployment.worker = lambda: None
    with caplog.at_level(logging.INFO):
        assert deployment.scheduled_run()["action"] == "starting"
    assert steps(caplog, "gpu_worker_lost") and world.ssm_value() == "none"
    assert world.instance_state(instance_id) == "running"
    # WHEN it answers again THEN it is published again
    deployment.worker = lambda: worker_url
    assert deployment.scheduled_run()["action"] == "ready" and world.ssm_value() == instance_id


def test_gpu_controller_a_window_deferred_while_its_own_wake_starts_the_gpu_runs_at_once(deployment, db):
    from handlers.events.gpu_controller import lambda_handler

    # GIVEN the worker stopped, a window in the DLQ (the ingest's own wake lost), and the controller run by
    # the consumer's wake right after it registered the deferred message
    world = deployment.world
    world.launch_stopped_worker()
    deployment.record_windows(range(1))
    deployment.ingest(0)
    deployment.controller_runs = len(deployment.invoker.invocations)
    deployment.invoker.register(CONTROLLER, lambda payload: lambda_handler(payload, lambda_context()))
    set_services(deployment.services.replace(gpu_demand=deployment.demand()))
    # WHEN the consumer defers the window and the GPU is ready by its second look
    assert deployment.consume_dlq() == 1  # the first receive fails; the message is visible again at once
    # THEN the window completed without waiting out the 900 s, once
    assert deployment.statuses(db, range(1)) == [ProcessingStatus.COMPLETE]
    assert world.dlq_depth() == 0 and visual_of(deployment.services).calls == [4]


def test_gpu_controller_without_a_worker_or_launch_template_says_so_and_keeps_the_windows(
    deployment, db, clock, caplog
):
    import dataclasses

    # GIVEN no tagged instance, no launch template, and a window waiting in the DLQ
    world = dataclasses.replace(
        deployment.world, settings=deployment.world.settings.model_copy(update={"gpu_launch_template": None})
    )
    controller = controller_for(world, clock, lambda: None)
    deployment.record_windows(range(1))
    deployment.ingest(0)
    deployment.consume_dlq()
    # WHEN the controller runs THEN it reports that there is no worker to start, and the window waits
    with caplog.at_level(logging.INFO):
        assert controller.reconcile("schedule").action == "no_worker"
    assert steps(caplog, "gpu_no_worker") and world.tagged_instances() == []
    assert world.dlq_depth() == 1 and deployment.statuses(db, range(1)) == [ProcessingStatus.PENDING]


def test_gpu_controller_a_session_starting_just_after_a_stop_restarts_the_gpu_and_loses_nothing(deployment, db, caplog):
    # GIVEN an idle worker the scheduled run has just stopped
    world, clock = deployment.world, deployment.clock
    instance_id = world.launch_stopped_worker()
    deployment.services.gpu_controller.record_demand("operator")
    assert deployment.scheduled_run()["action"] == "ready"
    clock.advance(world.settings.gpu_idle_stop_s + 1)
    assert deployment.scheduled_run()["action"] == "stopped"
    # WHEN a new session's windows arrive right after
    deployment.record_windows(range(2))
    caplog.clear()
    with caplog.at_level(logging.INFO):
        for index in range(2):
            deployment.ingest(index)
        deployment.consume_dlq()
        outcomes = deployment.run_controller_invokes()
    # THEN their wake starts it again, and each window completes once
    assert outcomes[0]["action"] == "ready" and outcomes[0]["released"] == 2
    assert len(steps(caplog, "gpu_start_requested")) == 1 and world.ssm_value() == instance_id
    deployment.consume_dlq()
    assert deployment.statuses(db, range(2)) == [ProcessingStatus.COMPLETE] * 2
    assert world.dlq_depth() == 0 and visual_of(deployment.services).calls == [4, 4]


def test_gpu_controller_ready_between_the_consumers_two_looks_does_not_leave_a_window_hidden(deployment, db):
    # GIVEN the worker stopped, a window in the DLQ, and a controller run that completes (SSM written,
    # deferred messages released) after the consumer hid the message but before it registered it
    world = deployment.world
    world.launch_stopped_worker()
    deployment.record_windows(range(1))
    deployment.ingest(0)
    deployment.controller_runs = len(deployment.invoker.invocations)
    demand = deployment.demand()
    register = demand.defer

    def controller_finishes_first(message_id: str, receipt_handle: str) -> None:
        assert deployment.controller.reconcile("ingest").action == "ready"  # its release saw no record yet
        register(message_id, receipt_handle)

    demand.defer = controller_finishes_first  # type: ignore[method-assign]
    set_services(deployment.services.replace(gpu_demand=demand))
    deployment.control.record_demand("ingest", deployment.clock.now())
    # WHEN the consumer takes the message THEN its second look sees the GPU ready and un-hides it at once
    assert deployment.consume_dlq() == 1
    assert deployment.statuses(db, range(1)) == [ProcessingStatus.COMPLETE]
    assert world.dlq_depth() == 0 and visual_of(deployment.services).calls == [4]
    assert deployment.control.deferred() == []  # settled by the consumer: nothing waits for the GPU any more


def test_gpu_controller_run_failing_right_after_the_start_call_is_finished_by_the_next_run(deployment, db):
    # GIVEN windows deferred while the GPU is off, and a run that dies right after EC2 accepted the start
    world = deployment.world
    instance_id = world.launch_stopped_worker()
    deployment.record_windows(range(2))
    for index in range(2):
        deployment.ingest(index)
    deployment.consume_dlq()
    fleet = deployment.controller.ports.fleet
    real_start = fleet.start

    def start_then_die(target: str) -> None:
        real_start(target)
        raise RuntimeError("the run was killed after StartInstances")

    fleet.start = start_then_die  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        deployment.controller.reconcile("ingest")
    fleet.start = real_start  # type: ignore[method-assign]
    assert world.ssm_value() == "none" and world.instance_state(instance_id) == "running"
    # WHEN the next scheduled run comes THEN it adopts the started worker; every window completes once
    outcome = deployment.scheduled_run()
    assert outcome["action"] == "ready" and outcome["released"] == 2 and world.ssm_value() == instance_id
    deployment.consume_dlq()
    assert deployment.statuses(db, range(2)) == [ProcessingStatus.COMPLETE] * 2
    assert world.dlq_depth() == 0 and visual_of(deployment.services).calls == [4, 4]
