"""The GPU controller's adapters: EC2, SSM, the control table (DynamoDB), the IngestDLQ (SQS), capture
windows, the worker's `/health` over HTTP, and the wall clock.

Control table `GPU_CONTROL_TABLE` (PK `pk`, SK `sk`, TTL attribute `expiresAt`):
- `pk=gpu, sk=lease`: `owner`, `leaseUntil` — one controller acts at a time (a conditional put);
- `pk=gpu, sk=start`: the last start (`instanceId`, `since`, `failures`, `failedAt`);
- `pk=demand, sk=<reason>`: `at` — the last time that kind of work found the GPU down;
- `pk=deferred, sk=<DLQ message id>`: `receiptHandle`, `firstDeferredAt` — written by the DLQ consumer
  when it hides a message for the GPU, so the controller can make it visible again once the GPU is ready.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from worldmm.aws import conditional_write
from worldmm.gpu.controller import DeferredSummary, GpuController, StartRecord, WorkerHealth, WorkerInstance
from worldmm.gpu.discovery import describe_instance, gpu_url_for, normalize_gpu_instance_id

if TYPE_CHECKING:
    from worldmm.gpu.settings import GpuSettings


class OpenWindows(Protocol):
    """What the capture buffer tells the controller (worldmm.capture.dynamo.CaptureStore satisfies it)."""

    def overdue_windows(self, opened_before: float) -> Iterator[tuple[str, int]]: ...


CHALLENGE_HEADER = "X-Worker-Challenge"
DEFERRED_TTL_S = 15 * 86_400  # past the DLQ's 14-day retention
# SQS's answers for a receipt handle that no longer names an in-flight receive: the message was received
# again (a newer handle exists), or deleted (its window completed). Either way this record is done.
STALE_HANDLE_CODES = frozenset({"ReceiptHandleIsInvalid", "MessageNotInflight", "InvalidParameterValue"})


def _num(value: Any) -> float | None:
    return float(value["N"]) if isinstance(value, dict) and "N" in value else None


def _dec(value: float) -> dict[str, str]:
    return {"N": str(Decimal(str(round(value, 3))))}


class Ec2WorkerFleet:
    """The worker instances tagged `Name=GPU_WORKER_TAG`; launches from `GPU_LAUNCH_TEMPLATE`."""

    def __init__(self, settings: GpuSettings, ec2: Any) -> None:
        self.settings = settings
        self.ec2 = ec2

    @staticmethod
    def _instance(raw: dict[str, Any]) -> WorkerInstance:
        return WorkerInstance(
            instance_id=str(raw["InstanceId"]),
            state=str(raw["State"]["Name"]),
            private_ip=raw.get("PrivateIpAddress"),
        )

    def find(self, preferred_id: str | None) -> WorkerInstance | None:
        if preferred_id is not None:
            raw = describe_instance(self.ec2, preferred_id)
            if raw is not None and raw["State"]["Name"] not in ("terminated", "shutting-down"):
                return self._instance(raw)
        reservations = self.ec2.describe_instances(
            Filters=[
                {"Name": "tag:Name", "Values": [self.settings.gpu_worker_tag]},
                {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]},
            ]
        )["Reservations"]
        found = [dict(i) for r in reservations for i in r.get("Instances", [])]
        if not found:
            return None
        # A running one first (never start a second while one runs), then the newest.
        found.sort(key=lambda i: (i["State"]["Name"] in ("running", "pending"), str(i.get("LaunchTime", ""))))
        return self._instance(found[-1])

    def start(self, instance_id: str) -> None:
        self.ec2.start_instances(InstanceIds=[instance_id])

    def stop(self, instance_id: str) -> None:
        self.ec2.stop_instances(InstanceIds=[instance_id])

    def launch(self) -> WorkerInstance:
        template = self.settings.gpu_launch_template
        if not template:
            from worldmm.errors import ConfigurationError

            raise ConfigurationError("GPU_LAUNCH_TEMPLATE is not set: no worker instance to start or launch")
        tags = [{"Key": "Name", "Value": self.settings.gpu_worker_tag}]
        raw = self.ec2.run_instances(
            LaunchTemplate={"LaunchTemplateName": template, "Version": "$Default"},
            MinCount=1,
            MaxCount=1,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )["Instances"][0]
        return self._instance(raw)


class SsmInstancePointer:
    """`GPU_INSTANCE_PARAM`: an instance id, or the "none" sentinel."""

    def __init__(self, settings: GpuSettings, ssm: Any) -> None:
        self.name = settings.gpu_instance_param
        self.ssm = ssm

    def read(self) -> str | None:
        try:
            value = self.ssm.get_parameter(Name=self.name)["Parameter"]["Value"]
        except self.ssm.exceptions.ParameterNotFound:
            return None
        return normalize_gpu_instance_id(value)

    def write(self, instance_id: str | None) -> None:
        self.ssm.put_parameter(Name=self.name, Value=instance_id or "none", Type="String", Overwrite=True)


class DynamoControlStore:
    """The controller's lease, demand, last start and the deferred-message registry (see module docstring)."""

    def __init__(self, table: str, client: Any) -> None:
        self.table = table
        self.client = client

    # lease
    def acquire_lease(self, owner: str, now: float, ttl_s: float) -> bool:
        leased = conditional_write(
            self.client.put_item,
            TableName=self.table,
            Item={"pk": {"S": "gpu"}, "sk": {"S": "lease"}, "owner": {"S": owner}, "leaseUntil": _dec(now + ttl_s)},
            ConditionExpression="attribute_not_exists(pk) OR leaseUntil < :now OR #o = :me",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":now": _dec(now), ":me": {"S": owner}},
        )
        return leased is not None

    def release_lease(self, owner: str) -> None:
        conditional_write(
            self.client.delete_item,
            TableName=self.table,
            Key={"pk": {"S": "gpu"}, "sk": {"S": "lease"}},
            ConditionExpression="#o = :me",
            ExpressionAttributeNames={"#o": "owner"},
            ExpressionAttributeValues={":me": {"S": owner}},
        )

    # demand
    def record_demand(self, reason: str, now: float) -> None:
        self.client.put_item(
            TableName=self.table, Item={"pk": {"S": "demand"}, "sk": {"S": reason[:64]}, "at": _dec(now)}
        )

    def latest_demand(self, reasons: frozenset[str] | None = None) -> float | None:
        items = self._query("demand")
        times = [_num(item.get("at")) for item in items if reasons is None or item["sk"]["S"] in reasons]
        known = [t for t in times if t is not None]
        return max(known) if known else None

    # last start
    def start_record(self) -> StartRecord:
        item = self.client.get_item(
            TableName=self.table, Key={"pk": {"S": "gpu"}, "sk": {"S": "start"}}, ConsistentRead=True
        ).get("Item")
        if not item:
            return StartRecord()
        return StartRecord(
            instance_id=item["instanceId"]["S"] if "instanceId" in item else None,
            since=_num(item.get("since")),
            failures=int(_num(item.get("failures")) or 0),
            failed_at=_num(item.get("failedAt")),
        )

    def save_start_record(self, record: StartRecord) -> None:
        item: dict[str, Any] = {"pk": {"S": "gpu"}, "sk": {"S": "start"}, "failures": {"N": str(record.failures)}}
        if record.instance_id:
            item["instanceId"] = {"S": record.instance_id}
        if record.since is not None:
            item["since"] = _dec(record.since)
        if record.failed_at is not None:
            item["failedAt"] = _dec(record.failed_at)
        self.client.put_item(TableName=self.table, Item=item)

    # deferred DLQ messages
    def put_deferred(self, message_id: str, receipt_handle: str, now: float) -> None:
        self.client.update_item(
            TableName=self.table,
            Key={"pk": {"S": "deferred"}, "sk": {"S": message_id}},
            UpdateExpression="SET receiptHandle = :h, deferredAt = :now, expiresAt = :exp, "
            "firstDeferredAt = if_not_exists(firstDeferredAt, :now)",
            ExpressionAttributeValues={
                ":h": {"S": receipt_handle},
                ":now": _dec(now),
                ":exp": {"N": str(int(now + DEFERRED_TTL_S))},
            },
        )

    def forget_deferred(self, message_id: str) -> None:
        self.client.delete_item(TableName=self.table, Key={"pk": {"S": "deferred"}, "sk": {"S": message_id}})

    def deferred(self) -> list[tuple[str, str, float | None]]:
        """(message id, receipt handle, first deferred at) of every deferred message."""
        return [
            (item["sk"]["S"], item["receiptHandle"]["S"], _num(item.get("firstDeferredAt")))
            for item in self._query("deferred")
        ]

    def _query(self, pk: str) -> Iterator[dict[str, Any]]:
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
            ConsistentRead=True,
        ):
            yield from page.get("Items", [])


def control_table_definition(table: str) -> dict[str, Any]:
    """`CreateTable` arguments of the control table, as template.yaml declares it."""
    return {
        "TableName": table,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    }


class SqsDeferredWork:
    """The IngestDLQ's deferred messages: counted from the registry, released with visibility 0."""

    def __init__(self, control: DynamoControlStore, sqs: Any, queue_url: str | None) -> None:
        self.control = control
        self.sqs = sqs
        self.queue_url = queue_url

    def summary(self) -> DeferredSummary:
        records = self.control.deferred()
        firsts = [first for _, _, first in records if first is not None]
        return DeferredSummary(count=len(records), oldest_at=min(firsts) if firsts else None)

    def release(self) -> int:
        if not self.queue_url:
            return 0
        records = self.control.deferred()
        released = 0
        for start in range(0, len(records), 10):
            batch = records[start : start + 10]
            answer = self.sqs.change_message_visibility_batch(
                QueueUrl=self.queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                    for i, (_, handle, _) in enumerate(batch)
                ],
            )
            done = {int(entry["Id"]) for entry in answer.get("Successful", [])}
            released += len(done)
            done |= {int(f["Id"]) for f in answer.get("Failed", []) if f.get("Code") in STALE_HANDLE_CODES}
            for i in sorted(done):
                self.control.forget_deferred(batch[i][0])
        return released


class CaptureWindowsActivity:
    """Open capture windows (the capture buffer's sparse GSI): someone is recording now."""

    def __init__(self, capture: OpenWindows) -> None:
        self.capture = capture

    def capture_open(self, now: float) -> bool:
        return next(iter(self.capture.overdue_windows(now + 1)), None) is not None


class HttpWorkerProbe:
    """GET `/health` with a fresh challenge; trusted only when the proof is HMAC(token, challenge)."""

    def __init__(
        self,
        settings: GpuSettings,
        *,
        url_for: Callable[[WorkerInstance], str | None] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.url_for = url_for or self._private_url
        self.transport = transport

    def _private_url(self, instance: WorkerInstance) -> str | None:
        return gpu_url_for(self.settings, {"PrivateIpAddress": instance.private_ip})

    def health(self, instance: WorkerInstance) -> WorkerHealth:
        import hmac

        from worldmm.worker_signing import health_proof

        base = self.url_for(instance)
        if not base:
            return WorkerHealth(False)
        challenge = secrets.token_hex(16)
        timeout = httpx.Timeout(self.settings.gpu_connect_timeout_s, read=self.settings.gpu_read_timeout_s)
        try:
            with httpx.Client(transport=self.transport, timeout=timeout) as client:
                response = client.get(f"{base.rstrip('/')}/health", headers={CHALLENGE_HEADER: challenge})
            body = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return WorkerHealth(False)
        if not isinstance(body, dict):
            return WorkerHealth(False)
        token = self.settings.gpu_worker_key()
        expected = health_proof(token, challenge) if token else None
        proof = body.get("proof")
        trusted = expected is not None and isinstance(proof, str) and hmac.compare_digest(proof, expected)
        idle = body.get("idle_s")
        return WorkerHealth(
            reachable=True,
            status=str(body.get("status", "unknown")),
            trusted=trusted,
            idle_s=float(idle) if isinstance(idle, int | float) else None,
            in_flight=int(body.get("in_flight") or 0),
        )


class SystemClock:
    """The wall clock."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def build_gpu_controller(settings: GpuSettings, capture: OpenWindows) -> GpuController:
    """The controller on the deployment's EC2, SSM, control table, IngestDLQ and capture buffer."""
    from worldmm.aws import aws_client
    from worldmm.gpu.controller import ControllerPolicy, ControllerPorts
    from worldmm.gpu.discovery import ec2_client, ssm_client

    control = DynamoControlStore(settings.gpu_control_table, aws_client("dynamodb"))
    ports = ControllerPorts(
        fleet=Ec2WorkerFleet(settings, ec2_client(settings)),
        pointer=SsmInstancePointer(settings, ssm_client(settings)),
        deferred=SqsDeferredWork(control, aws_client("sqs"), settings.ingest_dlq_url),
        capture=CaptureWindowsActivity(capture),
        control=control,
        probe=HttpWorkerProbe(settings),
        clock=SystemClock(),
    )
    return GpuController(ports, ControllerPolicy.from_settings(settings))
