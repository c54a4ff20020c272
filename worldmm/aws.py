"""AWS SDK clients, built once per process (a warm Lambda container reuses them across invocations).

boto3 clients are thread-safe; endpoints come from the SDK's own configuration (AWS_ENDPOINT_URL*),
never from code.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=32)
def aws_client(
    service: str,
    *,
    connect_timeout: float | None = None,
    read_timeout: float | None = None,
    max_attempts: int | None = None,
) -> Any:
    """The process's client for `service` with these timeouts (one per distinct configuration)."""
    import boto3
    from botocore.config import Config

    build: Any = boto3.client  # the service is a runtime name, not one of the stubs' literals

    options: dict[str, Any] = {}
    if connect_timeout is not None:
        options["connect_timeout"] = connect_timeout
    if read_timeout is not None:
        options["read_timeout"] = read_timeout
    if max_attempts is not None:
        options["retries"] = {"max_attempts": max_attempts, "mode": "standard"}
    return build(service, config=Config(**options)) if options else build(service)


def error_code(exc: Exception) -> str | None:
    """The AWS error code a botocore `ClientError` carries (`ConditionalCheckFailedException`, ...), else None."""
    response = getattr(exc, "response", None) or {}
    code = response.get("Error", {}).get("Code")
    return str(code) if code else None


def conditional_check_failed(exc: Exception) -> bool:
    """Whether a DynamoDB write was refused by its condition (the item was not as the write expected)."""
    return error_code(exc) == "ConditionalCheckFailedException"


def conditional_write(write: Callable[..., dict[str, Any]], **request: Any) -> dict[str, Any] | None:
    """`write(**request)`, a DynamoDB write with a `ConditionExpression`: its response, or None when the
    condition refused it (the item was not as the write expected). Any other error is raised."""
    try:
        return write(**request)
    except Exception as exc:
        if conditional_check_failed(exc):
            return None
        raise


def hash_key_table(table_name: str, key: str) -> dict[str, Any]:
    """`CreateTable` arguments of an on-demand table keyed by the string attribute `key` alone."""
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": key, "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
    }
