"""Chat fits its time budget: the sequential model calls of the worst case, at 1.5 s each, plus a cold
start, fit the chat functions' timeout and API Gateway's 30 s. (bench/bench_chat_latency.py measures it.)"""

from __future__ import annotations

import json
import uuid

import pytest

from tests.deployed.emulators import ScriptedModels, backdate_session
from tests.deployed.stack import DeployedStack
from tests.support.adapters import FakeModelServer
from tests.support.capture import http_event

pytestmark = pytest.mark.integration

MODEL_LATENCY_S = 1.5
COLD_START_ALLOWANCE_S = 5.0  # imports, secret, DB connection, embeddings, GPU and DynamoDB round trips
API_GATEWAY_LIMIT_S = 30.0  # HTTP API's maximum integration timeout
CHAT_FUNCTIONS = ("ChatFunction", "ChatVerboseFunction")


def seed_windows(stack: DeployedStack, user: str, count: int = 2) -> str:
    """A session of `count` ingested windows (frames and audio put straight into the bucket); its id."""
    from tests.deployed.test_deployed_flow import jpeg, sqs_event, wav

    started = stack.invoke("CaptureStartFunction", http_event("POST", "/sessions", sub=user)).result
    session = json.loads(started["body"])["sessionId"]
    backdate_session(stack, session, 3600)
    s3 = stack.client("s3")
    bucket = stack.physical["FramesBucket"]
    for window in range(count):
        prefix = f"sessions/{session}/window_{window}/"
        for i in range(16):
            s3.put_object(Bucket=bucket, Key=f"{prefix}frame_{i:04d}.jpg", Body=jpeg(i + window))
        s3.put_object(Bucket=bucket, Key=f"{prefix}audio.wav", Body=wav())
    sqs_event(stack, "UploadEventsQueue")  # drained: the capture path is not this helper's concern
    for window in range(count):
        event = {"sessionId": session, "userId": user, "windowIndex": window, "frameCount": 16}
        assert stack.invoke("IngestWindowFunction", event).result["status"] == "ok"
    return session


def test_chat_worst_case_sequential_model_calls_fit_the_timeouts_at_1_5_s_per_call(
    stack: DeployedStack, models: tuple[FakeModelServer, ScriptedModels]
) -> None:
    server, scripted = models
    user = f"budget-{uuid.uuid4()}"
    seed_windows(stack, user)
    # GIVEN an agent that searches every round (the most model calls a question can take)
    scripted.always_search = True
    try:
        for function in CHAT_FUNCTIONS:
            before = len(server.calls("/v1/chat/completions"))
            path = "/memories/chat/verbose" if function == "ChatVerboseFunction" else "/memories/chat"
            # WHEN a question is asked
            run = stack.invoke(function, http_event("POST", path, sub=user, body={"question": "Who was there?"}))
            assert run.result["statusCode"] == 200, run.result
            # THEN its model calls (all sequential today), at 1.5 s each, fit the function and the API
            calls = len(server.calls("/v1/chat/completions")) - before
            budget = min(stack.timeout_s(function), API_GATEWAY_LIMIT_S)
            assert calls * MODEL_LATENCY_S + COLD_START_ALLOWANCE_S <= budget, (function, calls, budget)
    finally:
        scripted.always_search = False


def test_chat_functions_timeout_is_api_gateways_limit() -> None:
    """A function that outlives the API's 30 s answers nobody; one that is cut shorter wastes a budget."""
    from tests.support.template import load_template

    template = load_template()
    default = template["Globals"]["Function"]["Timeout"]
    for function in CHAT_FUNCTIONS:
        assert template["Resources"][function]["Properties"].get("Timeout", default) == API_GATEWAY_LIMIT_S
