"""The harness itself: real Redis, real moto services, scripted LLM behaviour."""

from __future__ import annotations

import boto3
import pytest

from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM, UnscriptedPromptError

pytestmark = pytest.mark.integration


def test_redis_fixture_is_a_real_server(redis_client) -> None:
    assert redis_client.ping() is True
    redis_client.set("k", b"v")
    assert redis_client.get("k") == b"v"
    assert redis_client.info("server")["redis_version"]


def test_moto_serves_every_aws_service_we_use(aws) -> None:
    boto3.client("s3").create_bucket(Bucket="worldmm-test")
    assert boto3.client("s3").list_buckets()["Buckets"][0]["Name"] == "worldmm-test"
    boto3.client("ssm").put_parameter(Name="/encache/gpu/instance_id", Value="none", Type="String")
    assert boto3.client("ssm").get_parameter(Name="/encache/gpu/instance_id")["Parameter"]["Value"] == "none"
    assert boto3.client("sqs").create_queue(QueueName="q")["QueueUrl"]
    boto3.client("dynamodb").create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    assert boto3.client("ec2").describe_instances()["Reservations"] == []
    assert boto3.client("lambda").list_functions()["Functions"] == []


def _request(purpose: str) -> LLMRequest:
    return LLMRequest(purpose=purpose, messages=[{"role": "user", "content": "hi"}], model="m", max_tokens=5)


@pytest.mark.unit
def test_scripted_llm_answers_per_prompt_and_in_queue_order() -> None:
    llm = ScriptedLLM({"ner": {"entities": ["Kate"]}}).queue("caption", ["first", "second"])
    assert llm.complete(_request("caption")).text == "first"
    assert llm.complete(_request("caption")).text == "second"
    assert llm.complete(_request("ner")).text == '{"entities": ["Kate"]}'
    with pytest.raises(UnscriptedPromptError):
        llm.complete(_request("caption"))
    assert [c.purpose for c in llm.calls] == ["caption", "caption", "ner", "caption"]
