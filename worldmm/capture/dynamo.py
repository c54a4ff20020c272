"""Capture state in DynamoDB: the sessions table and the per-window buffer table.

Sessions table: its key schema and the user's counter items are worldmm.ingest.catalog.dynamo's (the catalog
reads the table, and erases a user's items, there); a session's item holds `userId`, `createdAt`, `endedAt`
and `quotaWindows` (the windows it counted).

Windows table: PK `sessionId` (S), SK `windowIndex` (N); attributes `userId`, `frames` (number set of
frame indices that landed), `hasAudio`, `openedAt` (epoch seconds of the first upload), `closedAt`,
`closeReason`, `frameCount`, `ingestInvokedAt`. While a window is open it carries `openShard`, the
partition key of the sparse GSI `open_windows` (SK `openedAt`) the sweeper queries; closing removes it.
The close is one conditional write (`attribute_not_exists(closedAt)`), so exactly one caller wins.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping, Set
from decimal import Decimal
from typing import Any

from worldmm.aws import conditional_write, error_code
from worldmm.capture.models import CaptureSession, UploadKind, WindowState
from worldmm.ingest.catalog.dynamo import SESSION_KEY, capture_quota_id, session_key, sessions_table_definition

OPEN_WINDOWS_INDEX = "open_windows"


def capture_table_definitions(sessions_table: str, windows_table: str) -> list[dict[str, Any]]:
    """`CreateTable` arguments of the sessions and capture-windows tables, as template.yaml declares them."""
    return [
        sessions_table_definition(sessions_table),
        {
            "TableName": windows_table,
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [
                {"AttributeName": "sessionId", "AttributeType": "S"},
                {"AttributeName": "windowIndex", "AttributeType": "N"},
                {"AttributeName": "openShard", "AttributeType": "S"},
                {"AttributeName": "openedAt", "AttributeType": "N"},
            ],
            "KeySchema": [
                {"AttributeName": "sessionId", "KeyType": "HASH"},
                {"AttributeName": "windowIndex", "KeyType": "RANGE"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": OPEN_WINDOWS_INDEX,
                    "KeySchema": [
                        {"AttributeName": "openShard", "KeyType": "HASH"},
                        {"AttributeName": "openedAt", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        },
    ]


QUOTA_KEEP_S = 2 * 86_400
"""A day's counters expire (the table's TTL attribute `expiresAt`) this long after the day began."""


class CaptureStore:
    """Sessions and window-buffer rows on two DynamoDB tables (thread-safe: low-level client)."""

    def __init__(
        self, sessions_table: str, windows_table: str, *, open_shards: int = 8, client: Any | None = None
    ) -> None:
        if client is None:
            from worldmm.aws import aws_client

            client = aws_client("dynamodb")
        from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

        self.client = client
        self.sessions_table = sessions_table
        self.windows_table = windows_table
        self.open_shards = max(1, open_shards)
        self._ser = TypeSerializer()
        self._de = TypeDeserializer()

    # --- helpers --------------------------------------------------------------
    def _values(self, values: dict[str, Any]) -> dict[str, Any]:
        return {k: self._ser.serialize(v) for k, v in values.items()}

    def _item(self, raw: dict[str, Any]) -> dict[str, Any]:
        return {k: self._de.deserialize(v) for k, v in raw.items()}

    def _window_key(self, session_id: str, window_index: int) -> dict[str, Any]:
        return {"sessionId": {"S": session_id}, "windowIndex": {"N": str(window_index)}}

    def shard_of(self, session_id: str) -> str:
        """The open-window GSI partition for a session (spreads the sweeper's reads and writes)."""
        return f"open#{zlib.crc32(session_id.encode()) % self.open_shards}"

    def _window(self, item: dict[str, Any]) -> WindowState:
        data = self._item(item)

        def _num(name: str) -> float | None:
            value = data.get(name)
            return float(value) if isinstance(value, Decimal | int | float) else None

        return WindowState(
            session_id=str(data["sessionId"]),
            window_index=int(data["windowIndex"]),
            user_id=str(data.get("userId", "")),
            frames=frozenset(int(f) for f in data.get("frames", set())),
            has_audio=bool(data.get("hasAudio", False)),
            opened_at=_num("openedAt"),
            closed_at=_num("closedAt"),
            close_reason=data.get("closeReason"),
        )

    # --- per-user quotas ------------------------------------------------------
    def _count(self, user_id: str, day: str, counter: str, limit: int) -> dict[str, Any]:
        """The conditional increment of one of the user's counters of `day` (a sessions-table item)."""
        from datetime import UTC, datetime

        expires = int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()) + QUOTA_KEEP_S
        return {
            "TableName": self.sessions_table,
            "Key": session_key(capture_quota_id(user_id, day)),
            "UpdateExpression": "SET userId = :u, expiresAt = :x ADD #n :one",
            "ConditionExpression": "attribute_not_exists(#n) OR #n < :limit",
            "ExpressionAttributeNames": {"#n": counter},
            "ExpressionAttributeValues": self._values({":u": user_id, ":x": expires, ":one": 1, ":limit": limit}),
        }

    def reserve_session(self, user_id: str, day: str, limit: int) -> bool:
        """Count one more session of the user's `day`; False when `limit` are counted."""
        if limit <= 0:
            return False
        return conditional_write(self.client.update_item, **self._count(user_id, day, "sessions", limit)) is not None

    def reserve_window(self, user_id: str, session_id: str, window_index: int, day: str, limit: int) -> bool:
        """Count a window once: the session's row remembers it (`quotaWindows`) in the same transaction as the
        day's counter goes up, so a window asked for again never counts twice."""
        remember = {
            "TableName": self.sessions_table,
            "Key": session_key(session_id),
            "UpdateExpression": "ADD quotaWindows :w",
            "ConditionExpression": f"attribute_exists({SESSION_KEY}) AND NOT contains(quotaWindows, :i)",
            "ExpressionAttributeValues": {":w": {"NS": [str(window_index)]}, ":i": {"N": str(window_index)}},
        }
        if limit <= 0:
            return False
        try:
            self.client.transact_write_items(
                TransactItems=[{"Update": remember}, {"Update": self._count(user_id, day, "windows", limit)}]
            )
            return True
        except Exception as exc:
            if error_code(exc) != "TransactionCanceledException":
                raise
        # Cancelled: either the window was counted already (allowed) or the day's counter is at its limit.
        row = self.client.get_item(
            TableName=self.sessions_table,
            Key=session_key(session_id),
            ProjectionExpression="quotaWindows",
            ConsistentRead=True,
        ).get("Item", {})
        counted = self._item(row).get("quotaWindows", set())
        return Decimal(window_index) in counted

    def reserve_bytes(self, user_id: str, day: str, amount: int, limit: int) -> bool:
        """Add `amount` to the day's `bytes` counter unless it would pass `limit` (one conditional update)."""
        if amount > limit:
            return False
        update = self._count(user_id, day, "bytes", limit - amount + 1)
        update["ExpressionAttributeValues"][":one"] = {"N": str(amount)}
        return conditional_write(self.client.update_item, **update) is not None

    def _update_window(
        self,
        session_id: str,
        window_index: int,
        expression: str,
        values: dict[str, Any],
        *,
        condition: str | None = None,
        returns: str | None = None,
    ) -> dict[str, Any] | None:
        """One update of a window's row: with `condition`, None when the condition refuses it (`conditional_write`);
        the response (with the `returns` attributes) otherwise."""
        request: dict[str, Any] = {
            "TableName": self.windows_table,
            "Key": self._window_key(session_id, window_index),
            "UpdateExpression": expression,
            "ExpressionAttributeValues": self._values(values),
        }
        if returns is not None:
            request["ReturnValues"] = returns
        if condition is None:
            return dict(self.client.update_item(**request))
        return conditional_write(self.client.update_item, ConditionExpression=condition, **request)

    def count_rerun(self, session_id: str, window_index: int, limit: int) -> bool:
        """Count one more re-run of a closed window (`reruns`); False when `limit` are counted."""
        counted = self._update_window(
            session_id,
            window_index,
            "ADD reruns :one",
            {":one": 1, ":limit": limit},
            condition="attribute_not_exists(reruns) OR reruns < :limit",
        )
        return counted is not None

    # --- sessions -------------------------------------------------------------
    def create_session(self, session: CaptureSession) -> None:
        """Write a new sessions row (`sessionId`, `userId`, `createdAt`); never overwrites one."""
        self.client.put_item(
            TableName=self.sessions_table,
            Item=session_key(session.session_id)
            | self._values({"userId": session.user_id, "createdAt": session.created_at}),
            ConditionExpression=f"attribute_not_exists({SESSION_KEY})",
        )

    def get_session(self, session_id: str) -> CaptureSession | None:
        response = self.client.get_item(TableName=self.sessions_table, Key=session_key(session_id), ConsistentRead=True)
        raw = response.get("Item")
        if not raw:
            return None
        data = self._item(raw)
        return CaptureSession(
            session_id=session_id,
            user_id=str(data.get("userId", "")),
            created_at=str(data.get("createdAt", "")),
            ended_at=data.get("endedAt"),
        )

    def mark_session_ended(self, session_id: str, ended_at: str) -> str:
        """Set `endedAt` once; returns the stored value (the first end wins)."""
        ended = conditional_write(
            self.client.update_item,
            TableName=self.sessions_table,
            Key=session_key(session_id),
            UpdateExpression="SET endedAt = :e",
            ConditionExpression=f"attribute_exists({SESSION_KEY}) AND attribute_not_exists(endedAt)",
            ExpressionAttributeValues=self._values({":e": ended_at}),
        )
        if ended is not None:
            return ended_at
        session = self.get_session(session_id)
        return session.ended_at if session and session.ended_at else ended_at

    # --- windows --------------------------------------------------------------
    def record_open_upload(
        self,
        user_id: str,
        session_id: str,
        window_index: int,
        kind: UploadKind,
        frame: int | None,
        now: float,
    ) -> WindowState | None:
        """Add an upload to an open (or new) window; None when the window is already closed."""
        sets = [
            "userId = if_not_exists(userId, :u)",
            "openedAt = if_not_exists(openedAt, :now)",
            "openShard = if_not_exists(openShard, :shard)",
            "lastUploadAt = :now",
        ]
        values: dict[str, Any] = {
            ":u": user_id,
            ":now": Decimal(str(round(now, 3))),
            ":shard": self.shard_of(session_id),
        }
        expression = "SET " + ", ".join(sets)
        if kind is UploadKind.AUDIO:
            expression += ", hasAudio = :true"
            values[":true"] = True
        else:
            expression += " ADD frames :f"
            values[":f"] = {frame}
        response = self._update_window(
            session_id, window_index, expression, values, condition="attribute_not_exists(closedAt)", returns="ALL_NEW"
        )
        return None if response is None else self._window(response["Attributes"])

    def record_late_upload(
        self, session_id: str, window_index: int, kind: UploadKind, frame: int | None, now: float
    ) -> bool:
        """Add an upload to a closed window; True when the object is new (not a redelivered event)."""
        values: dict[str, Any] = {":now": Decimal(str(round(now, 3)))}
        if kind is UploadKind.AUDIO:
            expression = "SET lateUploadAt = :now, hasAudio = :true"
            values[":true"] = True
        else:
            expression = "SET lateUploadAt = :now ADD frames :f"
            values[":f"] = {frame}
        response = self._update_window(session_id, window_index, expression, values, returns="ALL_OLD")
        assert response is not None  # an update without a condition is never refused
        old = self._window(response["Attributes"])
        if kind is UploadKind.AUDIO:
            return not old.has_audio
        return frame not in old.frames

    def close_window(self, session_id: str, window_index: int, reason: str, now: float) -> WindowState | None:
        """Close an open window (the one conditional write); None if already closed or never opened."""
        response = self._update_window(
            session_id,
            window_index,
            "SET closedAt = :now, closeReason = :r REMOVE openShard",
            {":now": Decimal(str(round(now, 3))), ":r": reason},
            condition="attribute_exists(sessionId) AND attribute_not_exists(closedAt)",
            returns="ALL_NEW",
        )
        return None if response is None else self._window(response["Attributes"])

    def reopen_window(self, window: WindowState) -> None:
        """Undo a close whose ingest invoke failed, so a retry (or the sweeper) closes it again."""
        assert window.closed_at is not None
        self._update_window(
            window.session_id,
            window.window_index,
            "SET openShard = :shard REMOVE closedAt, closeReason",
            {":shard": self.shard_of(window.session_id), ":closed": Decimal(str(round(window.closed_at, 3)))},
            condition="closedAt = :closed",
        )

    def mark_ingest_invoked(self, session_id: str, window_index: int, frame_count: int, now: float) -> None:
        self._update_window(
            session_id,
            window_index,
            "SET frameCount = :fc, ingestInvokedAt = :now",
            {":fc": frame_count, ":now": Decimal(str(round(now, 3)))},
        )

    def get_window(self, session_id: str, window_index: int) -> WindowState | None:
        response = self.client.get_item(
            TableName=self.windows_table, Key=self._window_key(session_id, window_index), ConsistentRead=True
        )
        raw = response.get("Item")
        return self._window(raw) if raw else None

    def open_window_indices(self, session_id: str) -> list[int]:
        """The session's windows still buffering, in order."""
        paginator = self.client.get_paginator("query")
        found: list[int] = []
        for page in paginator.paginate(
            TableName=self.windows_table,
            KeyConditionExpression="sessionId = :s",
            FilterExpression="attribute_not_exists(closedAt)",
            ExpressionAttributeValues={":s": {"S": session_id}},
            ProjectionExpression="windowIndex",
            ConsistentRead=True,
        ):
            found.extend(int(item["windowIndex"]["N"]) for item in page.get("Items", []))
        return sorted(found)

    def overdue_windows(self, opened_before: float) -> Iterator[tuple[str, int]]:
        """(sessionId, windowIndex) of every open window whose first upload is older than `opened_before`."""
        paginator = self.client.get_paginator("query")
        for shard in range(self.open_shards):
            for page in paginator.paginate(
                TableName=self.windows_table,
                IndexName=OPEN_WINDOWS_INDEX,
                KeyConditionExpression="openShard = :shard AND openedAt <= :cutoff",
                ExpressionAttributeValues=self._values(
                    {":shard": f"open#{shard}", ":cutoff": Decimal(str(round(opened_before, 3)))}
                ),
            ):
                for item in page.get("Items", []):
                    yield item["sessionId"]["S"], int(item["windowIndex"]["N"])

    # --- forget-me ------------------------------------------------------------
    def erase_windows(
        self, user_id: str, session_ids: Iterable[str], only: Mapping[str, Set[int]] | None = None
    ) -> dict[str, int]:
        """Delete the window rows of `session_ids` (with `only`, just those windows of each session), each only
        while it names `user_id` or no one (a row made by a late upload names no user)."""
        deleted = 0
        for sid in session_ids:
            for page in self.client.get_paginator("query").paginate(
                TableName=self.windows_table,
                KeyConditionExpression="sessionId = :s",
                ExpressionAttributeValues={":s": {"S": sid}},
                ProjectionExpression="sessionId, windowIndex",
                ConsistentRead=True,
            ):
                for item in page.get("Items", []):
                    if only is not None and int(item["windowIndex"]["N"]) not in only.get(sid, set()):
                        continue
                    removed = conditional_write(
                        self.client.delete_item,
                        TableName=self.windows_table,
                        Key={"sessionId": item["sessionId"], "windowIndex": item["windowIndex"]},
                        ConditionExpression="attribute_not_exists(userId) OR userId = :u",
                        ExpressionAttributeValues={":u": {"S": user_id}},
                    )
                    deleted += removed is not None
        return {"dynamodb.capture_windows": deleted} if deleted else {}
