"""GPU worker discovery: live SSM read, sentinel normalisation, EC2 state check, adoption by tag (moto).

The resolved URL is only asserted as a string; nothing ever connects to the moto-issued private IPs.
"""

from __future__ import annotations

import logging

import boto3
import pytest

from tests.support.harness import make_settings
from worldmm.config import Settings
from worldmm.gpu.discovery import normalize_gpu_instance_id, resolve_gpu_url
from worldmm.gpu.settings import GpuSettings
from worldmm.services import Services

pytestmark = pytest.mark.integration

PARAM = "/encache/gpu/instance_id"


@pytest.fixture
def clients(aws):
    return boto3.client("ssm"), boto3.client("ec2")


def launch(ec2, name: str = "encache-gpu-worker") -> dict:
    instance = ec2.run_instances(
        ImageId="ami-12c6146b",  # a moto built-in AMI (listing images is slow)
        MinCount=1,
        MaxCount=1,
        InstanceType="g5.xlarge",
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "Name", "Value": name}]}],
    )["Instances"][0]
    return dict(instance)


def aws_settings() -> Settings:
    return make_settings(worldmm_profile="aws", gpu_worker_url=None)


def settings() -> GpuSettings:
    return GpuSettings.of(aws_settings())


@pytest.mark.parametrize("value", [None, "", "none", "None", "  NONE "])
def test_gpu_discovery_normalizes_sentinels_to_none(value):
    assert normalize_gpu_instance_id(value) is None


def test_gpu_discovery_running_instance_resolves_private_ip_url(clients):
    ssm, ec2 = clients
    inst = launch(ec2)
    ssm.put_parameter(Name=PARAM, Value=inst["InstanceId"], Type="String")
    assert resolve_gpu_url(settings(), ssm, ec2) == f"http://{inst['PrivateIpAddress']}:8000"


def test_gpu_discovery_sentinel_none_in_ssm_means_unavailable(clients):
    ssm, ec2 = clients
    ssm.put_parameter(Name=PARAM, Value="none", Type="String")
    assert resolve_gpu_url(settings(), ssm, ec2) is None


def test_gpu_discovery_absent_parameter_means_unavailable(clients):
    ssm, ec2 = clients
    assert resolve_gpu_url(settings(), ssm, ec2) is None


def test_gpu_discovery_stopped_instance_adopts_running_replacement_by_tag(clients, caplog):
    # GIVEN SSM names a stopped instance and a running instance carries the worker tag
    ssm, ec2 = clients
    old = launch(ec2)
    ec2.stop_instances(InstanceIds=[old["InstanceId"]])
    launch(ec2, name="something-else")
    new = launch(ec2)
    ssm.put_parameter(Name=PARAM, Value=old["InstanceId"], Type="String")
    # WHEN the URL is resolved
    with caplog.at_level(logging.INFO):
        url = resolve_gpu_url(settings(), ssm, ec2)
    # THEN the replacement is adopted: its private IP, and SSM now names it
    assert url == f"http://{new['PrivateIpAddress']}:8000"
    assert ssm.get_parameter(Name=PARAM)["Parameter"]["Value"] == new["InstanceId"]
    steps = {getattr(r, "step", None): r for r in caplog.records}
    assert steps["gpu_instance_state_issue"].state in {"stopped", "stopping"}
    assert steps["gpu_instance_adopted_by_tag"].new_instance_id == new["InstanceId"]
    assert steps["ssm_gpu_instance_id_updated"].instance_id == new["InstanceId"]


def test_gpu_discovery_terminated_without_replacement_fails_recovery(clients, caplog):
    ssm, ec2 = clients
    old = launch(ec2)
    ec2.terminate_instances(InstanceIds=[old["InstanceId"]])
    ssm.put_parameter(Name=PARAM, Value=old["InstanceId"], Type="String")
    with caplog.at_level(logging.INFO):
        assert resolve_gpu_url(settings(), ssm, ec2) is None
    assert any(getattr(r, "step", None) == "gpu_instance_recovery_failed" for r in caplog.records)
    assert ssm.get_parameter(Name=PARAM)["Parameter"]["Value"] == old["InstanceId"]


def test_gpu_discovery_services_reads_ssm_live_on_every_call(clients):
    # GIVEN the aws profile with no fixed worker URL
    ssm, ec2 = clients
    svc = Services(aws_settings())
    ssm.put_parameter(Name=PARAM, Value="none", Type="String")
    assert svc.gpu_url() is None
    # WHEN the parameter changes (a warm Lambda must see it) THEN the next call follows it
    inst = launch(ec2)
    ssm.put_parameter(Name=PARAM, Value=inst["InstanceId"], Type="String", Overwrite=True)
    assert svc.gpu_url() == f"http://{inst['PrivateIpAddress']}:8000"
