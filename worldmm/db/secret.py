"""Database credentials from a Secrets Manager secret in the format RDS writes (cached per container)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import URL

DRIVER = "postgresql+psycopg"


class SecretFormatError(ValueError):
    """The secret is not an RDS-style JSON object with at least username, password and host."""


class DatabaseSecret(BaseModel):
    """The keys RDS / Aurora write into a database secret (`engine` and the rest are informational)."""

    model_config = ConfigDict(extra="ignore")

    username: str
    password: str
    host: str
    port: int = 5432
    dbname: str = "postgres"
    engine: str = "postgres"
    options: dict[str, str] = Field(default_factory=dict)

    def url(self) -> URL:
        """A SQLAlchemy URL; `URL.create` escapes passwords with `@`, `/`, `%` and the like."""
        query = dict(self.options)
        host: str | None = self.host
        port: int | None = self.port
        if self.host.startswith("/"):  # a Unix socket directory (the local and test databases)
            query["host"] = self.host
            host, port = None, None
        return URL.create(
            DRIVER,
            username=self.username,
            password=self.password,
            host=host,
            port=port,
            database=self.dbname,
            query=query,
        )


def parse_secret(value: Any) -> DatabaseSecret:
    """The secret's credentials; raises SecretFormatError naming what is missing (never the values)."""
    from pydantic import ValidationError

    if not isinstance(value, dict):
        raise SecretFormatError("the database secret is not a JSON object")
    try:
        return DatabaseSecret.model_validate(value)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise SecretFormatError(f"the database secret lacks or mistypes: {', '.join(fields)}") from None


def url_from_secret(secret_arn: str, *, max_age_s: int = 300, host: str | None = None) -> str:
    """The application role's URL from the secret, fetched through Powertools Parameters; `host` (an RDS Proxy
    endpoint) replaces the secret's host and keeps its port, credentials and database.

    The value is cached in the container for `max_age_s`, so warm invocations make no Secrets
    Manager call and a rotated password is picked up within that time (a new URL, a new engine).
    """
    from aws_lambda_powertools.utilities import parameters

    value = parameters.get_secret(secret_arn, transform="json", max_age=max_age_s)
    secret = parse_secret(value)
    if host:
        secret = secret.model_copy(update={"host": host})
    return secret.url().render_as_string(hide_password=False)
