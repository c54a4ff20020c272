"""The chat store port (spec 004 ChatRepository) with its DynamoDB and PostgreSQL adapters.

Both adapters keep the same contract: the chats registry is the ownership check (a chat that is not
the caller's is indistinguishable from one that does not exist: `Forbidden`), message ids are ULIDs
generated here, messages are read newest first, chats are listed newest activity first, pages hold
the default 20 and at most 50 items, and cursors are opaque, signed and bound to their listing.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import ulid

from worldmm.chat.cursor import decode_cursor, encode_cursor
from worldmm.chat.models import ChatMessage, ChatsPage, ChatSummary, MessagesPage, Role, iso_timestamp
from worldmm.config import Profile, Settings
from worldmm.errors import BadRequest, Forbidden

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from worldmm.db.engine import Database
    from worldmm.services import Services

CHATS_BY_ACTIVITY_INDEX = "by_activity"
_NOT_YOURS = "chat not found or not yours"


class ChatRepository(Protocol):
    """Persistent chat threads of one deployment; every method is scoped by the caller's user_id."""

    def create_chat(self, user_id: str) -> str:
        """Register a new, empty chat owned by `user_id`; returns its id."""
        ...

    def chat_owned_by(self, user_id: str, chat_id: str) -> bool:
        """Whether `chat_id` exists and belongs to `user_id`."""
        ...

    def save_message(self, user_id: str, chat_id: str, role: Role, content: str) -> ChatMessage:
        """Append a message (server-side ULID) and update the chat's title, preview and activity."""
        ...

    def get_messages(
        self, user_id: str, chat_id: str, cursor: str | None = None, limit: int | None = None
    ) -> MessagesPage:
        """A page of the chat's messages, newest first; Forbidden if the chat is not the caller's."""
        ...

    def list_chats(self, user_id: str, cursor: str | None = None, limit: int | None = None) -> ChatsPage:
        """A page of the caller's chats, newest activity first."""
        ...


class _Rules:
    """What both adapters share: page sizes, titles, previews, ids and cursor scopes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def page_size(self, limit: int | None) -> int:
        if limit is None:
            return self.settings.chat_page_default
        if limit < 1:
            raise BadRequest("limit must be at least 1")
        return min(limit, self.settings.chat_page_max)

    def title(self, content: str) -> str:
        return " ".join(content.split())[: self.settings.chat_title_chars]

    def preview(self, content: str) -> str:
        return " ".join(content.split())[: self.settings.chat_preview_chars]

    @staticmethod
    def new_id() -> str:
        # One process-wide strictly monotonic generator: ids of the same millisecond still sort.
        return str(ulid.default_generator.generate())

    def encode(self, scope: list[str], position: dict[str, str]) -> str:
        return encode_cursor(self.settings.cursor_secret, scope, position)

    def decode(self, scope: list[str], cursor: str | None) -> dict[str, str] | None:
        return None if cursor is None else decode_cursor(self.settings.cursor_secret, scope, cursor)


def _messages_scope(user_id: str, chat_id: str) -> list[str]:
    return ["messages", user_id, chat_id]


def _chats_scope(user_id: str) -> list[str]:
    return ["chats", user_id]


def _parse_timestamp(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError as exc:
        raise BadRequest("invalid cursor") from exc


# --------------------------------------------------------------------------------------------------
# PostgreSQL (local profile): worldmm_chats / worldmm_chat_messages under row-level security.
# --------------------------------------------------------------------------------------------------


class PostgresChatRepository:
    """The chat store on PostgreSQL; every statement runs in the caller's RLS-scoped unit of work."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self._rules = _Rules(settings)
        self._db = db

    def create_chat(self, user_id: str) -> str:
        from worldmm.db.models import Chat

        chat_id = str(uuid.uuid4())
        now = datetime.now(UTC)
        with self._db.unit_of_work(user_id) as session:
            session.add(Chat(chat_id=chat_id, user_id=user_id, created_at=now, last_activity=now))
        return chat_id

    def chat_owned_by(self, user_id: str, chat_id: str) -> bool:
        with self._db.unit_of_work(user_id) as session:
            return self._owned(session, user_id, chat_id)

    def save_message(self, user_id: str, chat_id: str, role: Role, content: str) -> ChatMessage:
        from sqlalchemy import select

        from worldmm.db.models import Chat
        from worldmm.db.models import ChatMessage as MessageRow

        now = datetime.now(UTC)
        message_id = self._rules.new_id()
        with self._db.unit_of_work(user_id) as session:
            chat = session.scalar(
                select(Chat).where(Chat.chat_id == chat_id, Chat.user_id == user_id).with_for_update()
            )
            if chat is None:
                raise Forbidden(_NOT_YOURS)
            session.add(
                MessageRow(
                    chat_id=chat_id,
                    message_id=message_id,
                    user_id=user_id,
                    role=role,
                    content=content,
                    created_at=now,
                )
            )
            if role == "user" and not chat.title:
                chat.title = self._rules.title(content)
            chat.last_message = self._rules.preview(content)
            chat.last_activity = now
        return ChatMessage(
            message_id=message_id, chat_id=chat_id, role=role, content=content, created_at=iso_timestamp(now)
        )

    def get_messages(
        self, user_id: str, chat_id: str, cursor: str | None = None, limit: int | None = None
    ) -> MessagesPage:
        from sqlalchemy import select

        from worldmm.db.models import ChatMessage as MessageRow

        size = self._rules.page_size(limit)
        scope = _messages_scope(user_id, chat_id)
        with self._db.unit_of_work(user_id) as session:
            if not self._owned(session, user_id, chat_id):
                raise Forbidden(_NOT_YOURS)
            after = self._rules.decode(scope, cursor)
            query = (
                select(MessageRow)
                .where(MessageRow.chat_id == chat_id, MessageRow.user_id == user_id)
                .order_by(MessageRow.message_id.desc())
                .limit(size + 1)
            )
            if after is not None:
                query = query.where(MessageRow.message_id < after.get("message_id", ""))
            rows = list(session.scalars(query))
        page = rows[:size]
        next_cursor = (
            self._rules.encode(scope, {"message_id": page[-1].message_id}) if len(rows) > size else None
        )
        messages = [
            ChatMessage(
                message_id=row.message_id,
                chat_id=row.chat_id,
                role=row.role,
                content=row.content,
                created_at=iso_timestamp(row.created_at),
            )
            for row in page
        ]
        return MessagesPage(messages=messages, next_cursor=next_cursor)

    def list_chats(self, user_id: str, cursor: str | None = None, limit: int | None = None) -> ChatsPage:
        from sqlalchemy import select, tuple_

        from worldmm.db.models import Chat

        size = self._rules.page_size(limit)
        scope = _chats_scope(user_id)
        after = self._rules.decode(scope, cursor)
        query = (
            select(Chat)
            .where(Chat.user_id == user_id)
            .order_by(Chat.last_activity.desc(), Chat.chat_id.desc())
            .limit(size + 1)
        )
        if after is not None:
            at = _parse_timestamp(after.get("last_activity", ""))
            query = query.where(tuple_(Chat.last_activity, Chat.chat_id) < (at, after.get("chat_id", "")))
        with self._db.unit_of_work(user_id) as session:
            rows = list(session.scalars(query))
        page = rows[:size]
        next_cursor = None
        if len(rows) > size:
            last = page[-1]
            next_cursor = self._rules.encode(
                scope, {"last_activity": iso_timestamp(last.last_activity), "chat_id": last.chat_id}
            )
        conversations = [
            ChatSummary(
                id=row.chat_id,
                title=row.title,
                last_message=row.last_message,
                updated_at=iso_timestamp(row.last_activity),
            )
            for row in page
        ]
        return ChatsPage(conversations=conversations, next_cursor=next_cursor)

    @staticmethod
    def _owned(session: Any, user_id: str, chat_id: str) -> bool:
        from sqlalchemy import select

        from worldmm.db.models import Chat

        found = session.scalar(select(Chat.chat_id).where(Chat.chat_id == chat_id, Chat.user_id == user_id))
        return found is not None


# --------------------------------------------------------------------------------------------------
# DynamoDB (aws profile).
# Chats:    PK user_id, SK chat_id; GSI by_activity (PK user_id, SK activity_id = ULID of the last write).
# Messages: PK chat_id, SK message_id (ULID).
# --------------------------------------------------------------------------------------------------


def dynamo_table_definitions(settings: Settings) -> list[dict[str, Any]]:
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

    def __init__(self, settings: Settings, client: DynamoDBClient | None = None) -> None:
        self._rules = _Rules(settings)
        self._chats = settings.chats_table
        self._messages = settings.messages_table
        self._client_override = client

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
        from botocore.exceptions import ClientError

        now = iso_timestamp(datetime.now(UTC))
        message_id = self._rules.new_id()
        update = "SET last_message = :preview, last_activity = :now, activity_id = :activity"
        values = {":preview": _s(self._rules.preview(content)), ":now": _s(now), ":activity": _s(message_id)}
        if role == "user":
            update += ", title = if_not_exists(title, :title)"
            values[":title"] = _s(self._rules.title(content))
        try:
            # The chat's conditional update and the message's put commit together or not at all.
            self._client.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": self._chats,
                            "Key": {"user_id": _s(user_id), "chat_id": _s(chat_id)},
                            "UpdateExpression": update,
                            "ConditionExpression": "attribute_exists(chat_id)",
                            "ExpressionAttributeValues": values,
                        }
                    },
                    {
                        "Put": {
                            "TableName": self._messages,
                            "Item": {
                                "chat_id": _s(chat_id),
                                "message_id": _s(message_id),
                                "user_id": _s(user_id),
                                "role": _s(role),
                                "content": _s(content),
                                "created_at": _s(now),
                            },
                            "ConditionExpression": "attribute_not_exists(message_id)",
                        }
                    },
                ]
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException" and not (
                self.chat_owned_by(user_id, chat_id)
            ):
                raise Forbidden(_NOT_YOURS) from exc
            raise
        return ChatMessage(message_id=message_id, chat_id=chat_id, role=role, content=content, created_at=now)

    def get_messages(
        self, user_id: str, chat_id: str, cursor: str | None = None, limit: int | None = None
    ) -> MessagesPage:
        size = self._rules.page_size(limit)
        if not self.chat_owned_by(user_id, chat_id):
            raise Forbidden(_NOT_YOURS)
        scope = _messages_scope(user_id, chat_id)
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
        page = items[:size]
        next_cursor = None
        if len(items) > size:
            next_cursor = self._rules.encode(scope, {"message_id": _text(page[-1], "message_id")})
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
        scope = _chats_scope(user_id)
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
        page = items[:size]
        next_cursor = None
        if len(items) > size:
            last = page[-1]
            next_cursor = self._rules.encode(
                scope, {"chat_id": _text(last, "chat_id"), "activity_id": _text(last, "activity_id")}
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


def build_chat_repository(settings: Settings, services: Services) -> ChatRepository:
    """DynamoDB in the aws profile, PostgreSQL (the same database as the memory) locally."""
    if settings.worldmm_profile == Profile.AWS:
        return DynamoChatRepository(settings)
    return PostgresChatRepository(settings, services.db)
