"""The session catalog on the DynamoDB sessions table (the aws profile): the item capture's start writes.

This module is the one that knows the table's key schema: an item is keyed by `sessionId` (S) alone; a
session's item names its owner in `userId`, and each user's capture counters of one UTC day are the item
`quota#{day}#{userId}` with the same `userId` (so a scan for the user's items finds them). Capture
(worldmm.capture.dynamo) builds its keys and the table's definition from here; forget-me erases a user's
items through `DynamoSessionCatalog.erase_user`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from worldmm.aws import conditional_write, hash_key_table
from worldmm.ingest.catalog.port import SessionInfo, info_from_item

SESSION_KEY = "sessionId"
"""The sessions table's partition key (S)."""

QUOTA_ID_PREFIX = "quota#"
"""The sessions-table key of a user's capture counters of one UTC day: `quota#{day}#{userId}`."""


def session_key(session_id: str) -> dict[str, Any]:
    """The `Key` of the sessions-table item `session_id` (a session's or a counter's), in the low-level form."""
    return {SESSION_KEY: {"S": session_id}}


def capture_quota_id(user_id: str, day: str) -> str:
    """The sessions-table key of `user_id`'s capture counters on `day` (YYYY-MM-DD, UTC)."""
    return f"{QUOTA_ID_PREFIX}{day}#{user_id}"


def sessions_table_definition(table_name: str) -> dict[str, Any]:
    """`CreateTable` arguments of the sessions table, as template.yaml declares it."""
    return hash_key_table(table_name, SESSION_KEY)


class DynamoSessionCatalog:
    """The sessions table (key `sessionId`), through the process's low-level client (thread-safe)."""

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        from boto3.dynamodb.types import TypeDeserializer

        from worldmm.aws import aws_client

        self._table = table_name
        self._client = client or aws_client("dynamodb", connect_timeout=5, read_timeout=10)
        self._deserialize = TypeDeserializer().deserialize

    def get(self, session_id: str) -> SessionInfo | None:
        raw = self._client.get_item(TableName=self._table, Key=session_key(session_id)).get("Item")
        if not raw:
            return None
        return info_from_item(session_id, {k: self._deserialize(v) for k, v in raw.items()})

    def user_sessions(self, user_id: str) -> list[str]:
        """The sessions whose item names the user (a consistent scan; the user's counters are not sessions)."""
        return sorted(i for i in self._user_items(user_id) if not i.startswith(QUOTA_ID_PREFIX))

    def erase_user(self, user_id: str, session_ids: Iterable[str]) -> dict[str, int]:
        """The items of `session_ids`, then every counter item of the user, each only while it names the user."""
        sessions = self._delete_owned(user_id, session_ids)
        quotas = self._delete_owned(user_id, (i for i in self._user_items(user_id) if i.startswith(QUOTA_ID_PREFIX)))
        counts = {"dynamodb.sessions": sessions, "dynamodb.capture_quotas": quotas}
        return {store: n for store, n in counts.items() if n}

    def _user_items(self, user_id: str) -> list[str]:
        found: list[str] = []
        for page in self._client.get_paginator("scan").paginate(
            TableName=self._table,
            FilterExpression="userId = :u",
            ExpressionAttributeValues={":u": {"S": user_id}},
            ProjectionExpression=SESSION_KEY,
            ConsistentRead=True,
        ):
            found.extend(item[SESSION_KEY]["S"] for item in page.get("Items", []))
        return found

    def _delete_owned(self, user_id: str, keys: Iterable[str]) -> int:
        """Delete the items `keys`, each only while it still names the user; how many went."""
        deleted = 0
        for key in keys:
            removed = conditional_write(
                self._client.delete_item,
                TableName=self._table,
                Key=session_key(key),
                ConditionExpression="userId = :u",
                ExpressionAttributeValues={":u": {"S": user_id}},
            )
            deleted += removed is not None
        return deleted
