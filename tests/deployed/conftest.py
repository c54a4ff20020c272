"""The deployed configuration's emulators, started once per run of this folder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deployed.emulators import (
    ScriptedModels,
    deploy_stack,
    deployed_postgres,
    model_server,
    moto_server,
    template_default,
)
from tests.deployed.stack import DeployedStack, FakeGpuWorker, LambdaInvokeRecorder
from tests.support.adapters import FakeModelServer
from worldmm.db.local import LocalDatabase


@pytest.fixture(scope="session")
def deployed_pg() -> Iterator[LocalDatabase]:
    with deployed_postgres() as local:
        yield local


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture(scope="session")
def models() -> Iterator[tuple[FakeModelServer, ScriptedModels]]:
    scripted = ScriptedModels()
    server = model_server(scripted)
    try:
        yield server, scripted
    finally:
        server.stop()


@pytest.fixture(scope="session")
def lambda_service() -> Iterator[LambdaInvokeRecorder]:
    recorder = LambdaInvokeRecorder()
    yield recorder
    recorder.stop()


@pytest.fixture(scope="session")
def gpu_worker() -> Iterator[FakeGpuWorker]:
    worker = FakeGpuWorker(int(template_default("VisualEmbeddingDim")))
    yield worker
    worker.stop()


@pytest.fixture(scope="session")
def stack(
    moto_url: str,
    deployed_pg: LocalDatabase,
    models: tuple[FakeModelServer, ScriptedModels],
    lambda_service: LambdaInvokeRecorder,
    gpu_worker: FakeGpuWorker,
) -> DeployedStack:
    """template.yaml deployed on the emulators with its default parameters (RedisUrl empty)."""
    server, _ = models
    return deploy_stack(moto_url, deployed_pg, server, lambda_service, gpu_worker)
