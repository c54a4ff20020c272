"""The function invoker port's contract, run against Lambda (moto) and the in-process invoker.

moto runs no function code (its Docker-free Lambda backend), so for Lambda "delivered" is what reached the
Lambda API: each Invoke request, read off the wire, with its invocation type, and Lambda's answer. The
in-process invoker delivers to the handler registered under the name.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from worldmm.ingest.invoker.aws_lambda import LambdaInvoker
from worldmm.ingest.invoker.local import InProcessInvoker
from worldmm.ingest.invoker.port import FunctionInvoker

pytestmark = pytest.mark.integration

INGEST, RETRIGGER = "worldmm-ingest-window", "worldmm-retrigger"


@dataclass
class Rig:
    invoker: FunctionInvoker
    delivered: Callable[[str], list[dict[str, Any]]]
    """The payloads the named function was handed, in order."""


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


@pytest.fixture(params=["lambda", "in_process"])
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    if request.param == "in_process":
        received: dict[str, list[dict[str, Any]]] = {INGEST: [], RETRIGGER: []}
        invoker = InProcessInvoker()
        for name in received:
            invoker.register(name, received[name].append)
        yield Rig(invoker, lambda name: received[name])
        return
    import boto3
    from moto import mock_aws

    with mock_aws(config={"lambda": {"use_docker": False}}):
        iam = boto3.client("iam", region_name="us-east-1")
        role = iam.create_role(
            RoleName="worldmm-test",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )["Role"]["Arn"]
        client = boto3.client("lambda", region_name="us-east-1")
        for name in (INGEST, RETRIGGER):
            client.create_function(
                FunctionName=name, Runtime="python3.11", Role=role, Handler="handler.handler", Code={"ZipFile": _zip()}
            )
        sent: list[tuple[str, str | None, dict[str, Any]]] = []
        accepted: list[int] = []

        def record_request(params: dict[str, Any], **_: Any) -> None:
            headers = params["headers"]
            sent.append(
                (
                    params["url_path"].split("/functions/")[1].split("/")[0],
                    headers.get("X-Amz-Invocation-Type"),
                    json.loads(params["body"]),
                )
            )

        def record_answer(http_response: Any, **_: Any) -> None:
            accepted.append(http_response.status_code)

        client.meta.events.register("before-call.lambda.Invoke", record_request)
        client.meta.events.register("after-call.lambda.Invoke", record_answer)

        def delivered(name: str) -> list[dict[str, Any]]:
            # Every request was an asynchronous invoke that Lambda queued (202 Accepted)
            assert accepted == [202] * len(sent)
            assert all(kind == "Event" for _, kind, _ in sent)
            return [payload for function, _, payload in sent if function == name]

        yield Rig(LambdaInvoker(client), delivered)


def test_function_invoker_delivers_exactly_that_payload_once(rig: Rig) -> None:
    payload = {"userId": "alice", "sessionId": "s1", "windowIndex": 3, "frameCount": 16}
    rig.invoker.invoke_async(INGEST, payload)
    assert rig.delivered(INGEST) == [payload]
    assert rig.delivered(RETRIGGER) == []


def test_function_invoker_delivers_each_invoke_in_order_to_its_function(rig: Rig) -> None:
    rig.invoker.invoke_async(INGEST, {"windowIndex": 0})
    rig.invoker.invoke_async(RETRIGGER, {"sessionId": "s1"})
    rig.invoker.invoke_async(INGEST, {"windowIndex": 1})
    rig.invoker.invoke_async(INGEST, {"windowIndex": 1})  # a repeated invoke is delivered again
    assert rig.delivered(INGEST) == [{"windowIndex": 0}, {"windowIndex": 1}, {"windowIndex": 1}]
    assert rig.delivered(RETRIGGER) == [{"sessionId": "s1"}]


def test_function_invoker_delivers_the_payload_as_json(rig: Rig) -> None:
    # GIVEN a payload the caller goes on to change after the invoke
    payload: dict[str, Any] = {"nested": {"frames": [1, 2]}, "unicode": "café", "none": None}
    rig.invoker.invoke_async(INGEST, payload)
    payload["nested"]["frames"].append(3)
    # THEN the function got the payload as it was at the invoke, decoded from JSON
    assert rig.delivered(INGEST) == [{"nested": {"frames": [1, 2]}, "unicode": "café", "none": None}]


def test_function_invoker_refuses_a_payload_that_is_not_json(rig: Rig) -> None:
    with pytest.raises(TypeError):
        rig.invoker.invoke_async(INGEST, {"at": datetime(2027, 1, 1, tzinfo=UTC)})
    assert rig.delivered(INGEST) == []
