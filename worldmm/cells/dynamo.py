"""The placement map on DynamoDB (the aws profile): one item per user (key `user_id`: `cell`, `movingTo`).

Every write is conditional on the item being what the step expects, so two functions placing one new
user at once agree on the first, and a move's steps can be re-run after a crash.
"""

from __future__ import annotations

from typing import Any

from worldmm.aws import conditional_check_failed, conditional_write, hash_key_table
from worldmm.cells.port import Placement, PlacementConflict

KEY = "user_id"


def placements_table_definition(table_name: str) -> dict[str, Any]:
    """`CreateTable` arguments of the placements table, as template.yaml declares it."""
    return hash_key_table(table_name, KEY)


class DynamoPlacementMap:
    """Placements on the placements table, through the process's low-level client."""

    def __init__(self, table_name: str, client: Any | None = None) -> None:
        from worldmm.aws import aws_client

        self._table = table_name
        self._client = client or aws_client("dynamodb", connect_timeout=2, read_timeout=5)

    def get(self, user_id: str) -> Placement | None:
        item = self._client.get_item(TableName=self._table, Key={KEY: {"S": user_id}}, ConsistentRead=True).get("Item")
        if not item:
            return None
        moving = item.get("movingTo", {}).get("S")
        return Placement(user_id, item["cell"]["S"], moving)

    def place(self, user_id: str, cell: str) -> Placement:
        try:
            self._client.put_item(
                TableName=self._table,
                Item={KEY: {"S": user_id}, "cell": {"S": cell}},
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": KEY},
            )
        except Exception as exc:
            if not conditional_check_failed(exc):
                raise
            placed = self.get(user_id)
            if placed is None:  # placed and deleted in between: never on a live table
                raise
            return placed
        return Placement(user_id, cell)

    def _update(self, user_id: str, update: str, condition: str, values: dict[str, Any]) -> bool:
        updated = conditional_write(
            self._client.update_item,
            TableName=self._table,
            Key={KEY: {"S": user_id}},
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeValues={k: {"S": v} for k, v in values.items()},
        )
        return updated is not None

    def begin_move(self, user_id: str, source: str, target: str) -> Placement:
        if not self._update(
            user_id,
            "SET movingTo = :t",
            "cell = :s AND (attribute_not_exists(movingTo) OR movingTo = :t)",
            {":s": source, ":t": target},
        ):
            raise PlacementConflict(f"the user is not on {source}, or is moving elsewhere")
        return Placement(user_id, source, target)

    def switch(self, user_id: str, source: str, target: str) -> Placement:
        if self._update(user_id, "SET cell = :t", "cell = :s AND movingTo = :t", {":s": source, ":t": target}):
            return Placement(user_id, target, target)
        placed = self.get(user_id)
        if placed == Placement(user_id, target, target):
            return placed
        raise PlacementConflict(f"the user is not moving from {source} to {target}")

    def finish(self, user_id: str, target: str) -> Placement:
        if not self._update(user_id, "REMOVE movingTo", "cell = :t", {":t": target}):
            raise PlacementConflict(f"the user is not on {target}")
        return Placement(user_id, target)

    def forget(self, user_id: str) -> bool:
        try:
            deleted = self._client.delete_item(
                TableName=self._table,
                Key={KEY: {"S": user_id}},
                ConditionExpression="attribute_not_exists(movingTo)",
                ReturnValues="ALL_OLD",
            )
        except Exception as exc:
            if not conditional_check_failed(exc):
                raise
            raise PlacementConflict("the user is being moved: finish the move, then forget them") from exc
        return bool(deleted.get("Attributes"))
