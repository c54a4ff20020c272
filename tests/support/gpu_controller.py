"""The GPU controller's test world: moto's EC2/SSM/SQS/DynamoDB, a simulated clock, and the real gpu_worker
app served on 127.0.0.1 (the controller's probe is pointed there; moto's 10.x addresses are never dialled)."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3

from worldmm.capture.dynamo import CaptureStore, capture_table_definitions
from worldmm.config import Settings
from worldmm.gpu.aws import (
    CaptureWindowsActivity,
    DynamoControlStore,
    Ec2WorkerFleet,
    HttpWorkerProbe,
    SqsDeferredWork,
    SsmInstancePointer,
    control_table_definition,
)
from worldmm.gpu.controller import ControllerPolicy, ControllerPorts, GpuController
from worldmm.gpu.settings import GpuSettings

LAUNCH_TEMPLATE = "worldmm-gpu-worker"
MOTO_AMI = "ami-12c6146b"  # a moto built-in AMI


@dataclass
class SimClock:
    """Simulated time: `sleep` moves it forward (and runs `on_sleep` hooks: what happens meanwhile)."""

    t: float = 1_800_000_000.0
    on_sleep: list[Callable[[], None]] = field(default_factory=list)

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds
        hooks, self.on_sleep = self.on_sleep, []
        for hook in hooks:
            hook()

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class AwsWorld:
    settings: Settings
    ec2: Any
    ssm: Any
    sqs: Any
    dynamodb: Any
    queue_url: str
    capture: CaptureStore

    def instance_state(self, instance_id: str) -> str:
        raw = self.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        return str(raw["State"]["Name"])

    def tagged_instances(self) -> list[dict[str, Any]]:
        reservations = self.ec2.describe_instances(
            Filters=[{"Name": "tag:Name", "Values": [self.settings.gpu_worker_tag]}]
        )["Reservations"]
        return [i for r in reservations for i in r["Instances"]]

    def ssm_value(self) -> str:
        return str(self.ssm.get_parameter(Name=self.settings.gpu_instance_param)["Parameter"]["Value"])

    def dlq_depth(self) -> int:
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])

    def launch_stopped_worker(self) -> str:
        """A tagged worker instance from the launch template, stopped (a deployment at rest)."""
        instance_id = str(
            self.ec2.run_instances(
                LaunchTemplate={"LaunchTemplateName": LAUNCH_TEMPLATE, "Version": "$Default"},
                MinCount=1,
                MaxCount=1,
                TagSpecifications=[
                    {"ResourceType": "instance", "Tags": [{"Key": "Name", "Value": self.settings.gpu_worker_tag}]}
                ],
            )["Instances"][0]["InstanceId"]
        )
        self.ec2.stop_instances(InstanceIds=[instance_id])
        return instance_id


def aws_world(settings: Settings) -> AwsWorld:
    """Inside mock_aws: the DLQ, the control/sessions/capture tables, the "none" parameter, the launch template."""
    client: Any = boto3.client
    sqs, dynamodb, ec2, ssm = (client(s) for s in ("sqs", "dynamodb", "ec2", "ssm"))
    queue_url = sqs.create_queue(QueueName="ingest-dlq")["QueueUrl"]
    settings = settings.model_copy(update={"ingest_dlq_url": queue_url})
    dynamodb.create_table(**control_table_definition(settings.gpu_control_table))
    for definition in capture_table_definitions(settings.sessions_table, settings.capture_windows_table):
        dynamodb.create_table(**definition)
    ssm.put_parameter(Name=settings.gpu_instance_param, Value="none", Type="String")
    ec2.create_launch_template(
        LaunchTemplateName=LAUNCH_TEMPLATE,
        LaunchTemplateData={"ImageId": MOTO_AMI, "InstanceType": "g5.xlarge"},
    )
    capture = CaptureStore(settings.sessions_table, settings.capture_windows_table, client=dynamodb)
    return AwsWorld(settings, ec2, ssm, sqs, dynamodb, queue_url, capture)


def controller_for(
    world: AwsWorld, clock: SimClock, worker_url: Callable[[], str | None], **policy: Any
) -> GpuController:
    """The controller on moto with the real adapters; the probe asks `worker_url()` (loopback) for any instance."""
    settings = GpuSettings.of(world.settings)
    control = DynamoControlStore(settings.gpu_control_table, world.dynamodb)
    ports = ControllerPorts(
        fleet=Ec2WorkerFleet(settings, world.ec2),
        pointer=SsmInstancePointer(settings, world.ssm),
        deferred=SqsDeferredWork(control, world.sqs, world.queue_url),
        capture=CaptureWindowsActivity(world.capture),
        control=control,
        probe=HttpWorkerProbe(settings, url_for=lambda instance: worker_url()),
        clock=clock,
    )
    return GpuController(ports, dataclasses.replace(ControllerPolicy.from_settings(settings), **policy))


class BootingWorker:
    """The worker's address as the probe sees it: nothing until `boot_s` (simulated) after the instance was
    first seen running, then the loopback URL; `stopped()` makes the next start boot again."""

    def __init__(self, clock: SimClock, world: AwsWorld, url: str, boot_s: float) -> None:
        self.clock, self.world, self.url, self.boot_s = clock, world, url, boot_s
        self.first_seen: float | None = None

    def __call__(self) -> str | None:
        running = [i for i in self.world.tagged_instances() if i["State"]["Name"] == "running"]
        if not running:
            self.first_seen = None
            return None
        if self.first_seen is None:
            self.first_seen = self.clock.now()
        return self.url if self.clock.now() - self.first_seen >= self.boot_s else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serve_worker(app: Any) -> Iterator[str]:
    """The gpu_worker app on 127.0.0.1 (uvicorn in a thread) → its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="gpu-worker", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("worker did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def wait_status(url: str, wanted: str, timeout_s: float = 120) -> dict[str, Any]:
    """Poll the worker's /health (real time) until it says `wanted` (its model load runs in a thread)."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = httpx.get(f"{url}/health", timeout=5).json()
        if body["status"] == wanted:
            return dict(body)
        time.sleep(0.05)
    raise AssertionError(f"worker never said {wanted}")


def sqs_event(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Received SQS messages as Lambda's SQS event."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {
                    "ApproximateReceiveCount": m.get("Attributes", {}).get("ApproximateReceiveCount", "1"),
                    "SentTimestamp": "0",
                    "SenderId": "x",
                    "ApproximateFirstReceiveTimestamp": "0",
                },
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:ingest-dlq",
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }


def on_failure_record(payload: dict[str, Any]) -> dict[str, Any]:
    """What Lambda's OnFailure SQS destination writes for a failed async invoke."""
    return {
        "version": "1.0",
        "requestContext": {"condition": "RetriesExhausted"},
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
        "responsePayload": {"errorType": "GpuUnavailableError"},
    }
