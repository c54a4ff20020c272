"""With the template's RedisUrl parameter set, ingest and chat share graphs through a real Redis."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.deployed.settings_contract import settings_missing_from_template
from tests.deployed.stack import DeployedStack
from tests.deployed.test_chat_budget import seed_windows
from tests.support.capture import http_event

pytestmark = pytest.mark.integration


def test_with_redis_url_set_ingest_and_chat_use_redis_for_graphs(
    stack: DeployedStack, redis_url: str, redis_client: Any
) -> None:
    # GIVEN the same deployment with the RedisUrl parameter given (HasRedis)
    with_redis = DeployedStack(
        moto_url=stack.moto_url,
        parameters={**stack.parameters, "RedisUrl": redis_url},
        endpoints=stack.endpoints,
        physical=dict(stack.physical),
    )
    assert "REDIS_URL" not in stack.environment("ChatFunction")
    for function in ("ChatFunction", "ChatVerboseFunction", "IngestWindowFunction", "IngestDLQConsumer"):
        assert with_redis.environment(function)["REDIS_URL"] == redis_url
    user = f"redis-{uuid.uuid4()}"
    seed_windows(with_redis, user, count=1)
    # WHEN the wearer asks about someone the memory knows
    run = with_redis.invoke(
        "ChatFunction", http_event("POST", "/memories/chat", sub=user, body={"question": "When was I with Alice?"})
    )
    # THEN chat answered and the graph it built is cached in Redis under the spec's key
    assert run.result["statusCode"] == 200, run.result
    assert json.loads(run.result["body"])["chat_id"]
    assert redis_client.keys(f"worldmm:graph:{user}:episodic:30"), redis_client.keys("worldmm:graph:*")
    assert (
        settings_missing_from_template(with_redis.reads, {f: set(with_redis.environment(f)) for f in with_redis.reads})
        == {}
    )
