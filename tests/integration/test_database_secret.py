"""Database credentials from Secrets Manager (the template gives functions DATABASE_SECRET_ARN only)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests.support.harness import make_settings
from worldmm.db.engine import Database, get_database, resolve_database_url
from worldmm.db.local import LocalDatabase
from worldmm.db.secret import SecretFormatError, parse_secret

pytestmark = pytest.mark.integration

TRICKY_PASSWORD = "p@ss/w%rd:?#&="


@pytest.fixture(autouse=True)
def _fresh_parameter_cache() -> Iterator[None]:
    from aws_lambda_powertools.utilities import parameters

    parameters.clear_caches()
    yield
    parameters.clear_caches()


def rds_secret(pg: LocalDatabase, password: str = TRICKY_PASSWORD) -> dict[str, object]:
    """What RDS writes for the application role, pointing at the embedded server's socket."""
    return {
        "engine": "postgres",
        "host": str(pg.socket_dir),
        "port": 5432,
        "username": "worldmm_app",
        "password": password,
        "dbname": "worldmm",
    }


def put_secret(value: dict[str, object]) -> str:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    return client.create_secret(Name="worldmm/db", SecretString=json.dumps(value))["ARN"]


def test_secret_arn_resolves_to_a_url_that_connects_as_the_application_role(aws: None, pg: LocalDatabase) -> None:
    # GIVEN a secret in the RDS format and settings that name only its ARN (as the template does)
    arn = put_secret(rds_secret(pg))
    settings = make_settings(database_secret_arn=arn)
    # WHEN the application resolves its database
    url = resolve_database_url(settings)
    db = Database(url)
    # THEN it connects as the application role, and the password survived escaping intact
    with db.unit_of_work(None) as session:
        assert session.execute(text("SELECT current_user")).scalar_one() == "worldmm_app"
    assert make_url(url).password == TRICKY_PASSWORD
    assert make_url(url).database == "worldmm"


def test_secret_is_fetched_once_per_container_within_max_age(aws: None, pg: LocalDatabase) -> None:
    # GIVEN a secret that changes after the first read
    arn = put_secret(rds_secret(pg))
    settings = make_settings(database_secret_arn=arn)
    first = get_database(settings)
    boto3.client("secretsmanager", region_name="us-east-1").put_secret_value(
        SecretId=arn, SecretString=json.dumps(rds_secret(pg, password="rotated"))
    )
    # WHEN the database is asked for again within max_age
    again = get_database(settings)
    # THEN the cached secret is reused (no Secrets Manager call per invocation)
    assert again is first


def test_a_proxy_endpoint_replaces_the_secrets_host_and_keeps_its_credentials(aws: None) -> None:
    # GIVEN the RDS secret of the database and DATABASE_PROXY_HOST naming its RDS Proxy (the template's parameter)
    arn = put_secret({"username": "worldmm_app", "password": TRICKY_PASSWORD, "host": "db.internal", "port": 5432})
    settings = make_settings(
        database_secret_arn=arn, database_proxy_host="worldmm.proxy-abc.us-east-1.rds.amazonaws.com"
    )
    # WHEN the application resolves its database THEN it dials the proxy with the secret's role and password
    url = make_url(resolve_database_url(settings))
    assert (url.host, url.port, url.username, url.password) == (
        "worldmm.proxy-abc.us-east-1.rds.amazonaws.com",
        5432,
        "worldmm_app",
        TRICKY_PASSWORD,
    )
    # and without it, the secret's own host
    assert make_url(resolve_database_url(make_settings(database_secret_arn=arn))).host == "db.internal"


def test_secret_with_tcp_host_gives_host_and_port() -> None:
    url = parse_secret({"username": "u", "password": "a b@c", "host": "db.internal", "port": 6543}).url()
    assert (url.host, url.port, url.password, url.database) == ("db.internal", 6543, "a b@c", "postgres")


def test_secret_without_credentials_names_what_is_missing_not_the_values() -> None:
    with pytest.raises(SecretFormatError, match="host, password") as caught:
        parse_secret({"username": "worldmm_app", "engine": "postgres"})
    assert "worldmm_app" not in str(caught.value)
