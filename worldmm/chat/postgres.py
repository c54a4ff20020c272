"""The chat store on PostgreSQL (local profile): one adapter of the ChatRepository port."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from worldmm.chat.models import ChatMessage, ChatsPage, ChatSummary, MessagesPage, Role, iso_timestamp
from worldmm.chat.paging import NOT_YOURS, ChatRules, chats_scope, messages_scope, parse_timestamp
from worldmm.chat.settings import ChatSettings
from worldmm.errors import Forbidden

if TYPE_CHECKING:
    from worldmm.db.engine import Database


# --------------------------------------------------------------------------------------------------
# PostgreSQL (local profile): worldmm_chats / worldmm_chat_messages under row-level security.
# --------------------------------------------------------------------------------------------------


class PostgresChatRepository:
    """The chat store on PostgreSQL; every statement runs in the caller's RLS-scoped unit of work."""

    def __init__(self, settings: ChatSettings, db: Database) -> None:
        self._settings = settings
        self._db = db

    @cached_property
    def _rules(self) -> ChatRules:
        """Paging and cursor rules, made on first use: serving refuses to run without CURSOR_SECRET, while
        erasing a user (forget-me) needs no cursor key."""
        return ChatRules(self._settings)

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
        with self._db.unit_of_work(user_id) as session:
            chat = self._locked(session, user_id, chat_id)
            [message] = self._append(session, chat, [(role, content)])
        return message

    def save_turn(self, user_id: str, chat_id: str | None, question: str, answer: str) -> str:
        from worldmm.db.models import Chat

        with self._db.unit_of_work(user_id) as session:
            if chat_id is None:
                now = datetime.now(UTC)
                chat = Chat(chat_id=str(uuid.uuid4()), user_id=user_id, created_at=now, last_activity=now)
                session.add(chat)
            else:
                chat = self._locked(session, user_id, chat_id)
            self._append(session, chat, [("user", question), ("assistant", answer)])
            return str(chat.chat_id)

    @staticmethod
    def _locked(session: Any, user_id: str, chat_id: str) -> Any:
        from sqlalchemy import select

        from worldmm.db.models import Chat

        chat = session.scalar(select(Chat).where(Chat.chat_id == chat_id, Chat.user_id == user_id).with_for_update())
        if chat is None:
            raise Forbidden(NOT_YOURS)
        return chat

    def _append(self, session: Any, chat: Any, messages: list[tuple[Role, str]]) -> list[ChatMessage]:
        """Add `messages` in order to `chat` (a locked or new row) and update its title, preview, activity."""
        from worldmm.db.models import ChatMessage as MessageRow

        now = datetime.now(UTC)
        saved = []
        for role, content in messages:
            message_id = self._rules.new_id()
            session.add(
                MessageRow(
                    chat_id=chat.chat_id,
                    message_id=message_id,
                    user_id=chat.user_id,
                    role=role,
                    content=content,
                    created_at=now,
                )
            )
            if role == "user" and not chat.title:
                chat.title = self._rules.title(content)
            chat.last_message = self._rules.preview(content)
            chat.last_activity = now
            saved.append(
                ChatMessage(
                    message_id=message_id,
                    chat_id=chat.chat_id,
                    role=role,
                    content=content,
                    created_at=iso_timestamp(now),
                )
            )
        return saved

    def get_messages(
        self, user_id: str, chat_id: str, cursor: str | None = None, limit: int | None = None
    ) -> MessagesPage:
        from sqlalchemy import select

        from worldmm.db.models import ChatMessage as MessageRow

        size = self._rules.page_size(limit)
        scope = messages_scope(user_id, chat_id)
        with self._db.unit_of_work(user_id) as session:
            if not self._owned(session, user_id, chat_id):
                raise Forbidden(NOT_YOURS)
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
        page, next_cursor = self._rules.page(rows, size, scope, lambda last: {"message_id": last.message_id})
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
        scope = chats_scope(user_id)
        after = self._rules.decode(scope, cursor)
        query = (
            select(Chat)
            .where(Chat.user_id == user_id)
            .order_by(Chat.last_activity.desc(), Chat.chat_id.desc())
            .limit(size + 1)
        )
        if after is not None:
            at = parse_timestamp(after.get("last_activity", ""))
            query = query.where(tuple_(Chat.last_activity, Chat.chat_id) < (at, after.get("chat_id", "")))
        with self._db.unit_of_work(user_id) as session:
            rows = list(session.scalars(query))
        page, next_cursor = self._rules.page(
            rows,
            size,
            scope,
            lambda last: {"last_activity": iso_timestamp(last.last_activity), "chat_id": last.chat_id},
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

    def erase_user(self, user_id: str) -> dict[str, int]:
        """The user's messages, then their chats, in one unit of work (row-level security scopes it too)."""
        from sqlalchemy import delete

        from worldmm.db.models import Chat
        from worldmm.db.models import ChatMessage as MessageRow

        counts: dict[str, int] = {}
        with self._db.unit_of_work(user_id) as session:
            for model in (MessageRow, Chat):
                result = session.execute(delete(model).where(model.user_id == user_id))
                if deleted := int(getattr(result, "rowcount", 0) or 0):
                    counts[f"postgres.{model.__tablename__}"] = deleted
        return counts
