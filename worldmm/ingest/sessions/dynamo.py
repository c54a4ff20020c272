"""The session catalog on the DynamoDB sessions table (the aws profile): the item capture's start writes."""

from __future__ import annotations

from typing import Any

from worldmm.ingest.sessions.port import SessionInfo, info_from_item


class DynamoSessionCatalog:
    """The sessions table (key `sessionId`), through the process's low-level client (thread-safe)."""

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        from boto3.dynamodb.types import TypeDeserializer

        from worldmm.aws import aws_client

        self._table = table_name
        self._client = client or aws_client("dynamodb", connect_timeout=5, read_timeout=10)
        self._deserialize = TypeDeserializer().deserialize

    def get(self, session_id: str) -> SessionInfo | None:
        raw = self._client.get_item(TableName=self._table, Key={"sessionId": {"S": session_id}}).get("Item")
        if not raw:
            return None
        return info_from_item(session_id, {k: self._deserialize(v) for k, v in raw.items()})
