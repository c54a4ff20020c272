"""Shared fixtures: one embedded PostgreSQL per run (tables emptied per test), Redis, moto, scripted LLM."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.harness import embedded_postgres, isolated_home, make_settings, redis_server, truncate_all
from worldmm.config import Settings
from worldmm.db.engine import Database
from worldmm.db.local import LocalDatabase
from worldmm.llm.scripted import ScriptedLLM
from worldmm.services import Services, set_services

# No test may reach AWS or any model API: fake credentials, a region, and no proxies.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_SECURITY_TOKEN", "testing")
os.environ.setdefault("AWS_SESSION_TOKEN", "testing")
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "worldmm-tests")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "worldmm-tests")


@pytest.fixture(autouse=True)
def worldmm_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """This test's own WORLDMM_HOME for every `make_settings` it calls."""
    with isolated_home(tmp_path_factory.mktemp("home")) as home:
        yield home


@pytest.fixture(scope="session")
def pg() -> Iterator[LocalDatabase]:
    """The run's embedded PostgreSQL 18 + pgvector, migrated to head."""
    with embedded_postgres(make_settings()) as local:
        yield local


@pytest.fixture
def settings(pg: LocalDatabase) -> Settings:
    return make_settings(database_url=pg.app_url, database_admin_url=pg.admin_url)


@pytest.fixture
def postgres_lexemes(pg: LocalDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings made in the test reach the run's PostgreSQL: the composer reads a text's lexemes as the
    index does (`to_tsvector('english', ...)`), with no stand-in."""
    monkeypatch.setenv("DATABASE_URL", pg.app_url)


@pytest.fixture
def db(pg: LocalDatabase) -> Iterator[Database]:
    """The application role's Database on an empty schema."""
    truncate_all(pg.admin_url)
    yield Database(pg.app_url)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Any]:
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def scripted_llm() -> ScriptedLLM:
    return ScriptedLLM()


@pytest.fixture
def aws() -> Iterator[None]:
    """moto for every AWS service the project uses (S3, SQS, DynamoDB, SSM, EC2, Lambda)."""
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def services(settings: Settings, db: Database, scripted_llm: ScriptedLLM) -> Iterator[Services]:
    """Services on the real test database with the scripted LLM; installed as the process default."""
    from worldmm.memory.embedding.hashing import HashEmbedder

    svc = Services(settings, db=db, llm=scripted_llm, embedder=HashEmbedder(settings.embedding_dim))
    set_services(svc)
    yield svc
    set_services(None)
