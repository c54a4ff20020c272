"""template.yaml deployed onto emulators: moto in server mode, the embedded PostgreSQL, fake model APIs.

`DeployedStack` creates the template's storage resources in moto from their own Properties, resolves
every function's environment the way CloudFormation would (`!Ref`, `!GetAtt`, `!Sub`, `!If`, dynamic
`{{resolve:secretsmanager:...}}` references), and runs a function's handler in a fresh interpreter
(a cold start) with exactly that environment plus the Lambda runtime's own variables and the
emulator endpoints listed in `EMULATOR_ENDPOINTS`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.template import load_template

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("runner.py")
REGION = "us-east-1"
ACCOUNT = "123456789012"
STACK = "worldmm-dev"

# What a test adds to a function's template environment: only where emulators listen. Each is an
# endpoint override the SDKs honour (docs/architecture.md: boto3 AWS_ENDPOINT_URL*, the model SDKs *_BASE_URL)
# or the fixed worker address that replaces SSM/EC2 discovery (moto's EC2 addresses are unroutable).
EMULATOR_ENDPOINTS = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_LAMBDA",
    "OPENAI_BASE_URL",
    "GROQ_BASE_URL",
    "GPU_WORKER_URL",
)


class _NoValue:
    """AWS::NoValue: the key it is the value of is dropped."""


NO_VALUE = _NoValue()


@dataclass
class Invocation:
    """One asynchronous Lambda invoke the emulated Lambda service received."""

    function_name: str
    invocation_type: str
    payload: dict[str, Any]


class LambdaInvokeRecorder:
    """The Lambda Invoke API on 127.0.0.1: records `InvocationType=Event` invokes for the test to run."""

    def __init__(self) -> None:
        self.invocations: list[Invocation] = []
        self._lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                match = re.match(r"^/2015-03-31/functions/([^/]+)/invocations", self.path)
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b"{}"
                if match is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                with recorder._lock:
                    recorder.invocations.append(
                        Invocation(
                            match.group(1),
                            self.headers.get("X-Amz-Invocation-Type", "RequestResponse"),
                            json.loads(body or b"{}"),
                        )
                    )
                self.send_response(202)
                self.send_header("content-length", "0")
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def take(self) -> list[Invocation]:
        with self._lock:
            taken, self.invocations = self.invocations, []
        return taken

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class FakeGpuWorker:
    """The GPU worker's HTTP API on 127.0.0.1 (health and VLM2Vec encodes), deterministic vectors; once told the
    stack's worker key (`key`), it refuses unsigned encodes and signs its answers, as gpu_worker does.

    A clip's vector is a unit vector drawn from a hash of the request, as incompressible as a model's (a
    constant vector would compress to nothing and make the bytes a wearer-hour stores look small)."""

    def vector(self, request: bytes) -> list[float]:
        import numpy as np

        seed = int.from_bytes(hashlib.sha256(request).digest()[:8], "big")
        drawn = np.random.default_rng(seed).standard_normal(self.dim)
        return [float(x) for x in drawn / np.linalg.norm(drawn)]

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.key: str | None = None
        self.refused = 0
        worker = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _json(self, payload: Any, status: int = 200, signed_over: str | None = None) -> None:
                from worldmm.worker_signing import RESPONSE_SIGNATURE_HEADER, response_signature

                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if worker.key and signed_over:
                    mac = response_signature(worker.key, signed_over, status, data)
                    self.send_header(RESPONSE_SIGNATURE_HEADER, mac)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._json({"status": "ready", "models": {"vlm2vec": "ready"}})

            def do_POST(self) -> None:
                from worldmm.worker_signing import NONCE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, request_signature

                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                signed = None
                if worker.key:
                    timestamp, nonce = self.headers.get(TIMESTAMP_HEADER, ""), self.headers.get(NONCE_HEADER, "")
                    signed = request_signature(worker.key, "POST", self.path, timestamp, nonce, body)
                    if self.headers.get(SIGNATURE_HEADER) != signed:
                        worker.refused += 1
                        self._json({"detail": "unsigned request"}, status=401)
                        return
                self._json({"embedding": worker.vector(body), "model": "fake-vlm2vec"}, signed_over=signed)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Run:
    """What one cold-started invocation returned and which settings it read."""

    function: str
    result: Any
    settings_read: set[str]
    seconds: float
    output: str
    handler_s: float = 0.0  # the handler call alone (what a warm invocation bills), imports excluded


@dataclass
class DeployedStack:
    """The template's resources in moto and a way to run its functions as Lambda would."""

    moto_url: str
    parameters: dict[str, str]
    endpoints: dict[str, str]
    template: dict[str, Any] = field(default_factory=load_template)
    physical: dict[str, str] = field(default_factory=dict)
    reads: dict[str, set[str]] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)

    # --- CloudFormation intrinsics ----------------------------------------------------------------
    def _condition(self, name: str) -> bool:
        return bool(self.resolve(self.template["Conditions"][name]))

    def _pseudo(self, name: str) -> Any:
        return {
            "AWS::StackName": STACK,
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": NO_VALUE,
        }[name]

    def _ref(self, name: str) -> Any:
        if name.startswith("AWS::"):
            return self._pseudo(name)
        if name in self.template["Parameters"]:
            return self.parameters[name]
        return self.physical[name]

    def _get_att(self, name: str, attribute: str) -> str:
        kind = self.template["Resources"][name]["Type"]
        ref = self.physical[name]
        if kind == "AWS::SQS::Queue":
            queue_name = ref.rsplit("/", 1)[-1]
            return {"Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue_name}", "QueueName": queue_name}[attribute]
        if kind == "AWS::S3::Bucket" and attribute == "Arn":
            return f"arn:aws:s3:::{ref}"
        if kind == "AWS::DynamoDB::Table" and attribute == "Arn":
            return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{ref}"
        if kind == "AWS::Logs::LogGroup" and attribute == "Arn":
            return f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{ref}"
        if kind == "AWS::Events::EventBus" and attribute in {"Arn", "Name"}:
            return {"Arn": f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{ref}", "Name": ref}[attribute]
        raise KeyError(f"{name}.{attribute}")

    def _sub(self, text: str) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            value = self._get_att(*name.split(".", 1)) if "." in name else self._ref(name)
            return str(value)

        return re.sub(r"\$\{([^}!]+)\}", one, text)

    def resolve(self, value: Any) -> Any:
        """A template value with every intrinsic function evaluated (AWS::NoValue kept as NO_VALUE)."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self._ref(arg)
            if key == "Fn::GetAtt":
                return self._get_att(*arg)
            if key == "Fn::Sub":
                return self._sub(arg)
            if key == "Fn::If":
                name, then, otherwise = arg
                return self.resolve(then if self._condition(name) else otherwise)
            if key == "Fn::Equals":
                left, right = (self.resolve(v) for v in arg)
                return left == right
            if key == "Fn::Not":
                return not self.resolve(arg[0])
            if key == "Fn::And":
                return all(self.resolve(v) for v in arg)
            if key == "Fn::Or":
                return any(self.resolve(v) for v in arg)
            if key == "Condition":
                return self._condition(arg)
        return {k: self.resolve(v) for k, v in value.items()}

    def _dynamic(self, text: str) -> str:
        """CloudFormation's deploy-time `{{resolve:secretsmanager:NAME:SecretString:KEY}}` references."""

        def one(match: re.Match[str]) -> str:
            secret = self.client("secretsmanager").get_secret_value(SecretId=match.group(1))
            return str(json.loads(secret["SecretString"])[match.group(2)])

        return re.sub(r"\{\{resolve:secretsmanager:([^:]+):SecretString:([^:}]+)\}\}", one, text)

    # --- resources --------------------------------------------------------------------------------
    def secret_value(self, resource: str) -> str:
        """The value of one of the template's own secrets (what CloudFormation generated)."""
        found = self.client("secretsmanager").get_secret_value(SecretId=self.physical[resource])
        return str(found["SecretString"])

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, region_name=REGION, endpoint_url=self.moto_url)

    def functions(self) -> dict[str, dict[str, Any]]:
        return {
            name: resource["Properties"]
            for name, resource in self.template["Resources"].items()
            if resource["Type"] == "AWS::Serverless::Function"
        }

    def deploy(self) -> DeployedStack:
        """Create the template's queues, tables, parameter, event bus and bucket (with its notifications) in
        moto; a resource whose `Condition` is false is not created, as CloudFormation skips it."""
        resources = {
            name: resource
            for name, resource in self.template["Resources"].items()
            if "Condition" not in resource or self._condition(resource["Condition"])
        }
        for name, resource in resources.items():
            kind = resource["Type"]
            if kind == "AWS::SQS::Queue":
                queue_name = f"{STACK}-{name}"
                self.physical[name] = self.client("sqs").create_queue(QueueName=queue_name)["QueueUrl"]
            elif kind == "AWS::DynamoDB::Table":
                self.physical[name] = f"{STACK}-{name}"
            elif kind == "AWS::Serverless::Function":
                props = resource["Properties"]
                self.physical[name] = f"{STACK}-{name}"
                if "FunctionName" in props:
                    self.physical[name] = self._sub(props["FunctionName"]["Fn::Sub"])
            elif kind in {"AWS::Logs::LogGroup", "AWS::Serverless::HttpApi"}:
                self.physical[name] = f"{STACK}-{name}"
            elif kind == "AWS::Events::EventBus":  # its Ref is its name
                bus_name = self._sub(resource["Properties"]["Name"]["Fn::Sub"])
                self.client("events").create_event_bus(Name=bus_name)
                self.physical[name] = bus_name
            elif kind == "AWS::SecretsManager::Secret":  # GenerateSecretString: a random value, its ARN the Ref
                import secrets as random

                value = random.token_urlsafe(48)
                created = self.client("secretsmanager").create_secret(Name=f"{STACK}-{name}", SecretString=value)
                self.physical[name] = created["ARN"]
        for name, resource in resources.items():
            kind, props = resource["Type"], resource.get("Properties", {})
            if kind == "AWS::DynamoDB::Table":
                table = self.resolve(props)
                args = {
                    k: table[k]
                    for k in ("AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes", "BillingMode")
                    if k in table
                }
                self.client("dynamodb").create_table(TableName=self.physical[name], **args)
            elif kind == "AWS::SSM::Parameter":
                param = self.resolve(props)
                self.physical[name] = param["Name"]
                self.client("ssm").put_parameter(Name=param["Name"], Type=param["Type"], Value=param["Value"])
        for name, resource in resources.items():
            if resource["Type"] == "AWS::S3::Bucket":
                bucket = self.resolve(resource["Properties"])
                self.physical[name] = bucket["BucketName"]
                s3 = self.client("s3")
                s3.create_bucket(Bucket=bucket["BucketName"])
                queues = bucket["NotificationConfiguration"]["QueueConfigurations"]
                s3.put_bucket_notification_configuration(
                    Bucket=bucket["BucketName"],
                    NotificationConfiguration={
                        "QueueConfigurations": [
                            {
                                "QueueArn": q["Queue"],
                                "Events": [q["Event"]],
                                "Filter": {
                                    "Key": {
                                        "FilterRules": [
                                            {"Name": r["Name"], "Value": r["Value"]}
                                            for r in q["Filter"]["S3Key"]["Rules"]
                                        ]
                                    }
                                },
                            }
                            for q in queues
                        ]
                    },
                )
        return self

    # --- functions --------------------------------------------------------------------------------
    def environment(self, function: str) -> dict[str, str]:
        """The function's environment as CloudFormation would set it (Globals merged, NoValue dropped)."""
        merged = dict(self.template["Globals"]["Function"]["Environment"]["Variables"])
        merged.update(self.functions()[function].get("Environment", {}).get("Variables", {}))
        resolved = {k: self.resolve(v) for k, v in merged.items()}
        return {k: self._dynamic(str(v)) for k, v in resolved.items() if v is not NO_VALUE}

    def timeout_s(self, function: str) -> int:
        props = self.functions()[function]
        return int(props.get("Timeout", self.template["Globals"]["Function"]["Timeout"]))

    def lambda_env(self, function: str, extra_env: dict[str, str] | None = None) -> dict[str, str]:
        """The whole environment the python3.12 runtime gives the function's process (its own variables,
        the emulators' endpoints, the template's environment, then `extra_env`)."""
        props = self.functions()[function]
        code_dir = ROOT / props["CodeUri"]
        return {
            # The Lambda runtime's own variables.
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "TZ": ":UTC",
            "LAMBDA_TASK_ROOT": str(code_dir),
            "PYTHONPATH": str(code_dir),
            "_HANDLER": props["Handler"],
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_LAMBDA_FUNCTION_NAME": self.physical[function],
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(
                props.get("MemorySize", self.template["Globals"]["Function"]["MemorySize"])
            ),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
            **{k: v for k, v in self.endpoints.items() if k in EMULATOR_ENDPOINTS},
            **self.environment(function),
            **(extra_env or {}),
        }

    def invoke(self, function: str, event: Any, *, extra_env: dict[str, str] | None = None) -> Run:
        """Run the function's handler in a fresh interpreter (a cold start) with the template's env."""
        props = self.functions()[function]
        module, handler = props["Handler"].rsplit(".", 1)
        env = self.lambda_env(function, extra_env)
        with tempfile.TemporaryDirectory(prefix="worldmm-lambda-") as tmp:
            event_path, result_path = Path(tmp, "event.json"), Path(tmp, "result.json")
            event_path.write_text(json.dumps(event))
            started = time.monotonic()
            proc = subprocess.run(
                [sys.executable, str(RUNNER), module, handler, str(event_path), str(result_path)],
                env=env,
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=self.timeout_s(function) + 30,
            )
            seconds = time.monotonic() - started
            output = proc.stdout + proc.stderr
            if proc.returncode != 0 or not result_path.exists():
                raise AssertionError(f"{function} failed (rc {proc.returncode}):\n{output[-6000:]}")
            outcome = json.loads(result_path.read_text())
        if "error" in outcome:
            raise AssertionError(f"{function} raised {outcome['error']}:\n{output[-6000:]}")
        read = set(outcome["settings_read"])
        self.reads.setdefault(function, set()).update(read)
        run = Run(function, outcome["result"], read, seconds, output, float(outcome.get("handler_s", 0.0)))
        self.runs.append(run)
        return run
