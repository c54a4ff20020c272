"""The chat store on DynamoDB (aws profile): one adapter of the ChatRepository port."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from worldmm.chat.models import ChatMessage, ChatsPage, ChatSummary, MessagesPage, Role, iso_timestamp
from worldmm.chat.paging import NOT_YOURS, ChatRules, chats_scope, messages_scope
from worldmm.chat.settings import ChatSettings
from worldmm.errors import Forbidden

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

CHATS_BY_ACTIVITY_INDEX = "by_activity"


# --------------------------------------------------------------------------------------------------
# DynamoDB (aws profile).
# Chats:    PK user_id, SK chat_id; GSI by_activity (PK user_id, SK activity_id = ULID of the last write).
# Messages: PK chat_id, SK message_id (ULID).
# --------------------------------------------------------------------------------------------------


def dynamo_table_definitions(settings: ChatSettings) -> list[dict[str, Any]]:
    """`CreateTable` arguments of the two chat tables, as the SAM template declares them."""
    return [
        {
            "TableName": settings.chats_table,
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [
                {"AttributeName": "user_id", "AttributeType": "S"},
                {"AttributeName": "chat_id", "AttributeType": "S"},
                {"AttributeName": "activity_id", "AttributeType": "S"},
            ],
            "KeySchema": [
                {"AttributeName": "user_id", "KeyType": "HASH"},
                {"AttributeName": "chat_id", "KeyType": "RANGE"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": CHATS_BY_ACTIVITY_INDEX,
                    "KeySchema": [
                        {"AttributeName": "user_id", "KeyType": "HASH"},
                        {"AttributeName": "activity_id", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        },
        {
            "TableName": settings.messages_table,
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [
                {"AttributeName": "chat_id", "AttributeType": "S"},
                {"AttributeName": "message_id", "AttributeType": "S"},
            ],
            "KeySchema": [
                {"AttributeName": "chat_id", "KeyType": "HASH"},
                {"AttributeName": "message_id", "KeyType": "RANGE"},
            ],
        },
    ]


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _text(item: dict[str, Any], name: str) -> str:
    value = item.get(name)
    return str(value["S"]) if value else ""


class DynamoChatRepository:
    """The chat store on DynamoDB; the Chats table is the ownership registry checked before Messages."""

    def __init__(self, settings: ChatSettings, client: DynamoDBClient | None = None) -> None:
        self._settings = settings
        self._chats = settings.chats_table
        self._messages = settings.messages_table
        self._client_override = client

    @cached_property
    def _rules(self) -> ChatRules:
        """Paging and cursor rules, made on first use: serving refuses to run without CURSOR_SECRET, while
        erasing a user (forget-me) needs no cursor key."""
        return ChatRules(self._settings)

    @property
    def _client(self) -> DynamoDBClient:
        if self._client_override is None:
            from worldmm.aws import aws_client

            self._client_override = aws_client("dynamodb")
        return self._client_override

    def create_chat(self, user_id: str) -> str:
        chat_id = str(uuid.uuid4())
        now = iso_timestamp(datetime.now(UTC))
        self._client.put_item(
            TableName=self._chats,
            Item={
                "user_id": _s(user_id),
                "chat_id": _s(chat_id),
                "created_at": _s(now),
                "last_activity": _s(now),
                "last_message": _s(""),
                "activity_id": _s(self._rules.new_id()),
            },
            ConditionExpression="attribute_not_exists(chat_id)",
        )
        return chat_id

    def chat_owned_by(self, user_id: str, chat_id: str) -> bool:
        found = self._client.get_item(
            TableName=self._chats,
            Key={"user_id": _s(user_id), "chat_id": _s(chat_id)},
            ProjectionExpression="chat_id",
            ConsistentRead=True,
        )
        return "Item" in found

    def save_message(self, user_id: str, chat_id: str, role: Role, content: str) -> ChatMessage:
        [message] = self._write(user_id, chat_id, [(role, content)], new=False)
        return message

    def save_turn(self, user_id: str, chat_id: str | None, question: str, answer: str) -> str:
        new = chat_id is None
        chat = str(uuid.uuid4()) if chat_id is None else chat_id
        self._write(user_id, chat, [("user", question), ("assistant", answer)], new=new)
        return chat

    def _write(self, user_id: str, chat_id: str, messages: list[tuple[Role, str]], *, new: bool) -> list[ChatMessage]:
        """One transaction: the chat's put (new) or conditional update, and every message's put."""
        from botocore.exceptions import ClientError

        now = iso_timestamp(datetime.now(UTC))
        saved = [
            ChatMessage(message_id=self._rules.new_id(), chat_id=chat_id, role=role, content=content, created_at=now)
            for role, content in messages
        ]
        last = saved[-1]
        title = next((self._rules.title(m.content) for m in saved if m.role == "user"), None)
        chat_item = (
            self._chat_put(user_id, chat_id, now, last, title)
            if new
            else self._chat_update(user_id, chat_id, now, last, title)
        )
        puts = [self._message_put(user_id, chat_id, now, m) for m in saved]
        try:
            # The chat's write and the messages' puts commit together or not at all.
            self._client.transact_write_items(TransactItems=[chat_item, *puts])  # type: ignore[list-item]
        except ClientError as exc:
            if (
                not new
                and exc.response.get("Error", {}).get("Code") == "TransactionCanceledException"
                and not self.chat_owned_by(user_id, chat_id)
            ):
                raise Forbidden(NOT_YOURS) from exc
            raise
        return saved

    def _chat_put(self, user_id: str, chat_id: str, now: str, last: ChatMessage, title: str | None) -> dict[str, Any]:
        """The transaction item creating a new chat whose last message is `last` (it must not exist yet)."""
        item = {
            "user_id": _s(user_id),
            "chat_id": _s(chat_id),
            "created_at": _s(now),
            "last_activity": _s(now),
            "last_message": _s(self._rules.preview(last.content)),
            "activity_id": _s(last.message_id),
            **({"title": _s(title)} if title else {}),
        }
        return {"Put": {"TableName": self._chats, "Item": item, "ConditionExpression": "attribute_not_exists(chat_id)"}}

    def _chat_update(
        self, user_id: str, chat_id: str, now: str, last: ChatMessage, title: str | None
    ) -> dict[str, Any]:
        """The transaction item moving an existing chat's activity to `last` (and titling it once, if untitled)."""
        update = "SET last_message = :preview, last_activity = :now, activity_id = :activity"
        values = {
            ":preview": _s(self._rules.preview(last.content)),
            ":now": _s(now),
            ":activity": _s(last.message_id),
        }
        if title:
            update += ", title = if_not_exists(title, :title)"
            values[":title"] = _s(title)
        return {
            "Update": {
                "TableName": self._chats,
                "Key": {"user_id": _s(user_id), "chat_id": _s(chat_id)},
                "UpdateExpression": update,
                "ConditionExpression": "attribute_exists(chat_id)",
                "ExpressionAttributeValues": values,
            }
        }

    def _message_put(self, user_id: str, chat_id: str, now: str, message: ChatMessage) -> dict[str, Any]:
        """The transaction item putting one message of the chat (it must not exist yet)."""
        return {
            "Put": {
                "TableName": self._messages,
                "Item": {
                    "chat_id": _s(chat_id),
                    "message_id": _s(message.message_id),
                    "user_id": _s(user_id),
                    "role": _s(message.role),
                    "content": _s(message.content),
                    "created_at": _s(now),
                },
                "ConditionExpression": "attribute_not_exists(message_id)",
            }
        }

    def get_messages(
        self, user_id: str, chat_id: str, cursor: str | None = None, limit: int | None = None
    ) -> MessagesPage:
        size = self._rules.page_size(limit)
        if not self.chat_owned_by(user_id, chat_id):
            raise Forbidden(NOT_YOURS)
        scope = messages_scope(user_id, chat_id)
        after = self._rules.decode(scope, cursor)
        query: dict[str, Any] = {
            "TableName": self._messages,
            "KeyConditionExpression": "chat_id = :chat",
            "ExpressionAttributeValues": {":chat": _s(chat_id)},
            "ScanIndexForward": False,
            "Limit": size + 1,
        }
        if after is not None:
            start = after.get("message_id", "")
            query["ExclusiveStartKey"] = {"chat_id": _s(chat_id), "message_id": _s(start)}
        items = self._client.query(**query).get("Items", [])
        page, next_cursor = self._rules.page(items, size, scope, lambda last: {"message_id": _text(last, "message_id")})
        messages = [
            ChatMessage(
                message_id=_text(item, "message_id"),
                chat_id=chat_id,
                role=_text(item, "role"),
                content=_text(item, "content"),
                created_at=_text(item, "created_at"),
            )
            for item in page
        ]
        return MessagesPage(messages=messages, next_cursor=next_cursor)

    def list_chats(self, user_id: str, cursor: str | None = None, limit: int | None = None) -> ChatsPage:
        size = self._rules.page_size(limit)
        scope = chats_scope(user_id)
        after = self._rules.decode(scope, cursor)
        query: dict[str, Any] = {
            "TableName": self._chats,
            "IndexName": CHATS_BY_ACTIVITY_INDEX,
            "KeyConditionExpression": "user_id = :user",
            "ExpressionAttributeValues": {":user": _s(user_id)},
            "ScanIndexForward": False,
            "Limit": size + 1,
        }
        if after is not None:
            query["ExclusiveStartKey"] = {
                "user_id": _s(user_id),
                "chat_id": _s(after.get("chat_id", "")),
                "activity_id": _s(after.get("activity_id", "")),
            }
        items = self._client.query(**query).get("Items", [])
        page, next_cursor = self._rules.page(
            items,
            size,
            scope,
            lambda last: {"chat_id": _text(last, "chat_id"), "activity_id": _text(last, "activity_id")},
        )
        conversations = [
            ChatSummary(
                id=_text(item, "chat_id"),
                title=_text(item, "title"),
                last_message=_text(item, "last_message"),
                updated_at=_text(item, "last_activity"),
            )
            for item in page
        ]
        return ChatsPage(conversations=conversations, next_cursor=next_cursor)

    def erase_user(self, user_id: str) -> dict[str, int]:
        """Each of the user's chats: its messages (batched), then its registry item."""
        chat_ids = [item["chat_id"]["S"] for item in self._query_all(self._chats, "user_id", user_id, "chat_id")]
        counts: dict[str, int] = {}
        for chat_id in chat_ids:
            # A chat's messages are its owner's; the user_id check keeps that true even for a bad row.
            keys = [
                {"chat_id": item["chat_id"], "message_id": item["message_id"]}
                for item in self._query_all(self._messages, "chat_id", chat_id, "chat_id, message_id, user_id")
                if item.get("user_id", {}).get("S", user_id) == user_id
            ]
            self._batch_delete(self._messages, keys)
            counts["dynamodb.messages"] = counts.get("dynamodb.messages", 0) + len(keys)
            self._client.delete_item(TableName=self._chats, Key={"user_id": _s(user_id), "chat_id": _s(chat_id)})
            counts["dynamodb.chats"] = counts.get("dynamodb.chats", 0) + 1
        return counts

    def _query_all(self, table: str, key: str, value: str, projection: str) -> Iterator[dict[str, Any]]:
        """Every item of `table` whose partition `key` is `value` (consistent reads, page after page)."""
        for page in self._client.get_paginator("query").paginate(
            TableName=table,
            KeyConditionExpression=f"{key} = :k",
            ExpressionAttributeValues={":k": _s(value)},
            ProjectionExpression=projection,
            ConsistentRead=True,
        ):
            yield from page.get("Items", [])

    def _batch_delete(self, table: str, keys: list[dict[str, Any]]) -> None:
        for start in range(0, len(keys), 25):
            requests: dict[str, Any] = {table: [{"DeleteRequest": {"Key": k}} for k in keys[start : start + 25]]}
            for attempt in range(8):
                unprocessed = self._client.batch_write_item(RequestItems=requests).get("UnprocessedItems") or {}
                if not unprocessed:
                    break
                requests = unprocessed
                time.sleep(min(2.0, 0.05 * 2**attempt))
            else:
                raise RuntimeError(f"{table}: deletes left unprocessed after retries")
