"""AWS clients are built once per container, not per call (a warm Lambda reuses them)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.support.harness import make_settings
from worldmm.aws import aws_client
from worldmm.gpu.discovery import resolve_gpu_url
from worldmm.gpu.settings import GpuSettings
from worldmm.ingest.catalog.port import session_info
from worldmm.services import Services

pytestmark = pytest.mark.integration


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    built: list[str] = []
    original = boto3.client

    def counting(service: str, *args: Any, **kwargs: Any) -> Any:
        built.append(service)
        return original(service, *args, **kwargs)

    aws_client.cache_clear()
    monkeypatch.setattr(boto3, "client", counting)
    yield built
    aws_client.cache_clear()


def test_gpu_discovery_builds_its_ssm_and_ec2_clients_once(aws: None, counted: list[str]) -> None:
    settings = make_settings(worldmm_profile="aws")
    boto3.client("ssm", region_name="us-east-1").put_parameter(
        Name=settings.gpu_instance_param, Type="String", Value="none"
    )
    counted.clear()
    for _ in range(3):
        assert resolve_gpu_url(GpuSettings.of(settings)) is None
    assert counted.count("ssm") == 1


def test_session_lookups_build_one_dynamodb_client(aws: None, counted: list[str]) -> None:
    services = Services(make_settings(worldmm_profile="aws", sessions_table="sessions"))
    boto3.client("dynamodb", region_name="us-east-1").create_table(
        TableName="sessions",
        AttributeDefinitions=[{"AttributeName": "sessionId", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "sessionId", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    counted.clear()
    for _ in range(3):
        assert session_info(services, "missing") is None
    assert counted == ["dynamodb"]
