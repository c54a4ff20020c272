"""The allowance port on DynamoDB (the aws profile): the allowances table, one item per user (key `user_id`).

A take reads the item, refills it in memory and writes it back under a condition that it is still what was
read (no `tokens` yet for a first take, else the same `updatedAt` and `tokens`): of two takes at
once, one wins and the other reads again. An item expires (`expiresAt`, the table's TTL) once it would be
full again, so idle users cost nothing; forget-me deletes it.
"""

from __future__ import annotations

import math
from typing import Any

from worldmm.allowance.port import Bucket, Grant
from worldmm.aws import conditional_write, hash_key_table

KEY = "user_id"
TTL_ATTRIBUTE = "expiresAt"
ATTEMPTS = 8


def allowances_table_definition(table_name: str) -> dict[str, Any]:
    """`CreateTable` arguments of the allowances table, as template.yaml declares it."""
    return hash_key_table(table_name, KEY)


def _n(value: float) -> dict[str, str]:
    return {"N": repr(float(value))}


class DynamoAllowances:
    """Token buckets on the allowances table, through the process's low-level client (thread-safe)."""

    def __init__(self, table_name: str, bucket: Bucket, client: Any | None = None) -> None:
        from worldmm.aws import aws_client

        self._table = table_name
        self._bucket = bucket
        self._client = client or aws_client("dynamodb", connect_timeout=2, read_timeout=5)

    def take(self, user_id: str, cost: float, now: float) -> Grant:
        bucket = self._bucket
        if cost > bucket.capacity:
            return Grant(False, 0.0, bucket.wait_s(0.0, cost))
        key = {KEY: {"S": user_id}}
        for _ in range(ATTEMPTS):
            item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
            if item and "tokens" in item and "updatedAt" in item:
                tokens, updated = float(item["tokens"]["N"]), float(item["updatedAt"]["N"])
                level = bucket.level(tokens, updated, now)
                condition = "tokens = :t0 AND updatedAt = :u0"
                values = {":t0": item["tokens"], ":u0": item["updatedAt"]}
            else:
                level, updated = bucket.capacity, now
                condition, values = "attribute_not_exists(tokens)", {}
            if level < cost:
                return Grant(False, level, bucket.wait_s(level, cost))
            left = level - cost
            full_at = max(now, updated) + (bucket.capacity - left) / max(bucket.per_second, 1e-9)
            taken = conditional_write(
                self._client.update_item,
                TableName=self._table,
                Key=key,
                UpdateExpression=f"SET tokens = :t, updatedAt = :u, {TTL_ATTRIBUTE} = :x",
                ConditionExpression=condition,
                ExpressionAttributeValues={
                    **values, ":t": _n(left), ":u": _n(max(now, updated)),
                    ":x": {"N": str(math.ceil(min(full_at, now + 30 * 86_400)))},
                },
            )  # fmt: skip
            if taken is not None:  # else another take won the race: read again
                return Grant(True, left)
        return Grant(False, 0.0, 1)  # contended beyond reason: the caller tries again in a second

    def erase_user(self, user_id: str) -> dict[str, int]:
        response = self._client.delete_item(TableName=self._table, Key={KEY: {"S": user_id}}, ReturnValues="ALL_OLD")
        return {"dynamodb.allowances": 1} if response.get("Attributes") else {}
