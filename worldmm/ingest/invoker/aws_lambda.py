"""The function invoker on AWS Lambda: an asynchronous (`InvocationType=Event`) invoke."""

from __future__ import annotations

import json
from typing import Any


class LambdaInvoker:
    """Lambda `InvocationType=Event`: Lambda queues the event and answers 202 before the function runs."""

    def __init__(self, client: Any | None = None) -> None:
        import boto3

        self.client = client or boto3.client("lambda")

    def invoke_async(self, function_name: str, payload: dict[str, Any]) -> None:
        self.client.invoke(FunctionName=function_name, InvocationType="Event", Payload=json.dumps(payload).encode())
