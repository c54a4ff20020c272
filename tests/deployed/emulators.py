"""The emulators a deployed stack runs on, as plain functions (the fixtures and the chat benchmark share them)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from tests.deployed.stack import REGION, DeployedStack, FakeGpuWorker, LambdaInvokeRecorder
from tests.support.adapters import FakeModelServer
from tests.support.harness import _free_port, embedded_postgres, make_settings
from tests.support.template import load_template
from worldmm.db.local import LocalDatabase
from worldmm.llm.port import LLMRequest
from worldmm.llm.scripted import ScriptedLLM

USER = "wearer-1"


def template_default(name: str) -> str:
    return str(load_template()["Parameters"][name]["Default"])


class ScriptedModels:
    """The models' answers, served over the OpenAI wire by FakeModelServer: a ScriptedLLM per purpose.

    The agent searches episodic memory once and then answers; with `always_search` it searches every
    round (the worst case: every round plus the forced answer). `latency_s` simulates model latency.
    """

    def __init__(self) -> None:
        from tests.support.memory import script_memory_models

        self.llm = script_memory_models(ScriptedLLM())
        self.llm.script("cross_scale_rerank", {"selected": [1]})
        self.llm.script("response", {"answer": "You talked with Alice."})
        self.llm.script("reasoning_agent", self._agent)
        self.latency_s = 0.0
        self.always_search = False
        self._lock = threading.Lock()

    def _agent(self, request: LLMRequest) -> dict[str, Any]:
        if not self.always_search and "frames with Alice" in request.prompt_text:  # a caption was retrieved
            return {"action": "ANSWER"}
        return {"action": "SEARCH", "memory_type": "episodic", "query": "when was I with Alice"}

    def reply(self, body: dict[str, Any]) -> str:
        fmt = body.get("response_format") or {}
        purpose = fmt.get("json_schema", {}).get("name", "unstructured")
        request = LLMRequest(purpose=purpose, messages=body["messages"], model=body["model"], max_tokens=256)
        if self.latency_s:
            time.sleep(self.latency_s)
        return self.llm.complete(request).text

    def purposes(self) -> list[str]:
        return [c.purpose for c in self.llm.calls]


def model_server(scripted: ScriptedModels) -> FakeModelServer:
    server = FakeModelServer().start()
    server.chat_reply = scripted.reply
    server.transcription = {
        "text": " I talk with Alice about the trip.",
        "segments": [{"id": 0, "start": 0.0, "end": 3.0, "text": " I talk with Alice about the trip."}],
    }
    return server


@contextmanager
def deployed_postgres(**parameter_overrides: str) -> Iterator[LocalDatabase]:
    """PostgreSQL migrated with the template's embedding dimensions (1536 unless overridden), as production is."""
    dims = {
        "embedding_dim": int(parameter_overrides.get("EmbeddingDim") or template_default("EmbeddingDim")),
        "visual_embedding_dim": int(
            parameter_overrides.get("VisualEmbeddingDim") or template_default("VisualEmbeddingDim")
        ),
    }
    with embedded_postgres(make_settings(**dims)) as local:
        yield local


@contextmanager
def moto_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def rds_secret(pg: LocalDatabase) -> dict[str, Any]:
    """What RDS writes into a database secret, for the application role on the embedded server."""
    return {
        "engine": "postgres",
        "host": str(pg.socket_dir),
        "port": 5432,
        "username": "worldmm_app",
        "password": "s3cr@t/with:specials",
        "dbname": "worldmm",
    }


def deploy_stack(
    moto_url: str,
    pg: LocalDatabase,
    server: FakeModelServer,
    lambda_service: LambdaInvokeRecorder,
    gpu_worker: FakeGpuWorker,
    **parameter_overrides: str,
) -> DeployedStack:
    """template.yaml on the emulators: default parameters, the database secret as RDS writes it."""
    import boto3

    secrets = boto3.client("secretsmanager", region_name=REGION, endpoint_url=moto_url)
    db_arn = secrets.create_secret(Name="worldmm/db", SecretString=json.dumps(rds_secret(pg)))["ARN"]
    keys = {"openai_api_key": "sk-test", "groq_api_key": "gsk-test"}  # the cursor and worker keys: the stack's own
    secrets.create_secret(Name=template_default("ModelKeysSecretName"), SecretString=json.dumps(keys))
    parameters = {
        name: str(spec["Default"]) for name, spec in load_template()["Parameters"].items() if "Default" in spec
    }
    parameters.update(
        {
            "DatabaseSecretArn": db_arn,
            "JwtIssuer": f"https://cognito-idp.{REGION}.amazonaws.com/{REGION}_test",
            "JwtAudience": "client-id",
            "VpcSubnetIds": "subnet-1",
            "LambdaSecurityGroupIds": "sg-1",
            **parameter_overrides,
        }
    )
    endpoints = {
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ENDPOINT_URL_LAMBDA": lambda_service.url,
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "GROQ_BASE_URL": server.url,
        "GPU_WORKER_URL": gpu_worker.url,
    }
    deployed = DeployedStack(moto_url=moto_url, parameters=parameters, endpoints=endpoints).deploy()
    gpu_worker.key = deployed.secret_value("GpuWorkerTokenSecret")  # as the worker's boot script reads it
    return deployed


@dataclass
class Emulated:
    stack: DeployedStack
    server: FakeModelServer
    scripted: ScriptedModels
    lambda_service: LambdaInvokeRecorder
    pg: LocalDatabase


@contextmanager
def emulated_stack(**parameter_overrides: str) -> Iterator[Emulated]:
    """Everything at once, for scripts (the benchmarks); tests use the session fixtures instead."""
    with ExitStack() as stack:
        pg = stack.enter_context(deployed_postgres(**parameter_overrides))
        moto_url = stack.enter_context(moto_server())
        scripted = ScriptedModels()
        server = model_server(scripted)
        stack.callback(server.stop)
        recorder = LambdaInvokeRecorder()
        stack.callback(recorder.stop)
        worker = FakeGpuWorker(int(template_default("VisualEmbeddingDim")))
        stack.callback(worker.stop)
        deployed = deploy_stack(moto_url, pg, server, recorder, worker, **parameter_overrides)
        yield Emulated(deployed, server, scripted, recorder, pg)


def backdate_session(stack: DeployedStack, session_id: str, seconds: float) -> None:
    """Move the session's start into the past: a test uploads in seconds what glasses upload over
    minutes, and chat only sees windows that have ended (as-of retrieval)."""
    from datetime import UTC, datetime, timedelta

    created = (datetime.now(UTC) - timedelta(seconds=seconds)).isoformat()
    stack.client("dynamodb").update_item(
        TableName=stack.physical["SessionsTable"],
        Key={"sessionId": {"S": session_id}},
        UpdateExpression="SET createdAt = :c",
        ExpressionAttributeValues={":c": {"S": created}},
    )
