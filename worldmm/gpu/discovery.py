"""Where the GPU worker is now: the instance id in SSM (read live, never from the environment), its EC2
state, and — when that instance is stopped or gone — a running replacement found by tag and adopted."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from worldmm.gpu.settings import GpuSettings

logger = Logger(child=True)

SENTINELS = frozenset({"", "none", "null", "0", "0.0.0.0"})
REPLACE_STATES = frozenset({"stopped", "stopping", "terminated", "shutting-down", "missing"})


def ssm_client(settings: GpuSettings) -> Any:
    """The process's SSM client (built once per container)."""
    return _discovery_client("ssm", settings)


def ec2_client(settings: GpuSettings) -> Any:
    """The process's EC2 client (built once per container)."""
    return _discovery_client("ec2", settings)


def _discovery_client(service: str, settings: GpuSettings) -> Any:
    """A client for finding the worker: the GPU timeouts, one retry."""
    from worldmm.aws import aws_client

    timeouts = {"connect_timeout": settings.gpu_connect_timeout_s, "read_timeout": settings.gpu_read_timeout_s}
    return aws_client(service, max_attempts=2, **timeouts)


def normalize_gpu_instance_id(value: str | None) -> str | None:
    """An instance id, or None for the sentinels an idle deployment writes ('none', empty, absent)."""
    if value is None:
        return None
    cleaned = value.strip()
    return None if cleaned.lower() in SENTINELS else cleaned


def read_gpu_instance_id(settings: GpuSettings, ssm: Any) -> str | None:
    """The live SSM value of `settings.gpu_instance_param`, normalised (absent parameter → None)."""
    try:
        value = ssm.get_parameter(Name=settings.gpu_instance_param)["Parameter"]["Value"]
    except ssm.exceptions.ParameterNotFound:
        return None
    return normalize_gpu_instance_id(value)


def gpu_sentinel(settings: GpuSettings, ssm: Any | None = None) -> str:
    """What the GPU instance parameter holds right now, as written (`none`, an instance id, ...), or
    `absent`: the `gpu_sentinel` of the `gpu_unavailable_raised` step says why no worker was found."""
    ssm = ssm or ssm_client(settings)
    try:
        value = ssm.get_parameter(Name=settings.gpu_instance_param)["Parameter"]["Value"]
    except ssm.exceptions.ParameterNotFound:
        return "absent"
    return str(value).strip() or "empty"


def describe_instance(ec2: Any, instance_id: str) -> dict[str, Any] | None:
    """The EC2 description of one instance, or None when EC2 does not know it."""
    from botocore.exceptions import ClientError

    try:
        reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "").startswith("InvalidInstanceID"):
            return None
        raise
    for reservation in reservations:
        for instance in reservation.get("Instances", []):
            return dict(instance)
    return None


def find_running_gpu_instance_by_tag(settings: GpuSettings, ec2: Any) -> dict[str, Any] | None:
    """A running instance tagged `Name=settings.gpu_worker_tag` (the newest launched), or None."""
    reservations = ec2.describe_instances(
        Filters=[
            {"Name": "tag:Name", "Values": [settings.gpu_worker_tag]},
            {"Name": "instance-state-name", "Values": ["running"]},
        ]
    )["Reservations"]
    instances: list[dict[str, Any]] = [
        dict(i) for r in reservations for i in r.get("Instances", []) if i.get("PrivateIpAddress")
    ]
    if not instances:
        return None
    return max(instances, key=lambda i: str(i.get("LaunchTime", "")))


def update_ssm_gpu_instance_id(settings: GpuSettings, ssm: Any, instance_id: str) -> None:
    """Persist an adopted instance id so the next reader heals without a tag scan."""
    ssm.put_parameter(Name=settings.gpu_instance_param, Value=instance_id, Type="String", Overwrite=True)
    logger.info(
        "ssm_gpu_instance_id_updated",
        extra={"step": "ssm_gpu_instance_id_updated", "instance_id": instance_id},
    )


def gpu_url_for(settings: GpuSettings, instance: dict[str, Any]) -> str | None:
    """`http://{private ip}:{port}` — private, since the Lambdas and the worker share a VPC."""
    ip = instance.get("PrivateIpAddress")
    return f"http://{ip}:{settings.gpu_worker_port}" if ip else None


def resolve_gpu_url(settings: GpuSettings, ssm: Any | None = None, ec2: Any | None = None) -> str | None:
    """The GPU worker's URL now, or None when there is no usable instance (callers raise GpuUnavailable)."""
    ssm = ssm or ssm_client(settings)
    instance_id = read_gpu_instance_id(settings, ssm)
    if instance_id is None:
        return None
    ec2 = ec2 or ec2_client(settings)
    instance = describe_instance(ec2, instance_id)
    state = str(instance["State"]["Name"]) if instance else "missing"
    if instance is not None and state == "running":
        return gpu_url_for(settings, instance)
    if state not in REPLACE_STATES:  # pending: it is starting; come back later
        logger.info("gpu_instance_not_ready", extra={"instance_id": instance_id, "state": state})
        return None
    logger.warning(
        "gpu_instance_state_issue",
        extra={"step": "gpu_instance_state_issue", "instance_id": instance_id, "state": state},
    )
    replacement = find_running_gpu_instance_by_tag(settings, ec2)
    if replacement is None:
        logger.warning(
            "gpu_instance_recovery_failed",
            extra={"step": "gpu_instance_recovery_failed", "instance_id": instance_id, "state": state},
        )
        return None
    new_id = str(replacement["InstanceId"])
    logger.info(
        "gpu_instance_adopted_by_tag",
        extra={
            "step": "gpu_instance_adopted_by_tag",
            "old_instance_id": instance_id,
            "new_instance_id": new_id,
        },
    )
    update_ssm_gpu_instance_id(settings, ssm, new_id)
    return gpu_url_for(settings, replacement)
