"""The chat API's values (spec 004 §2): messages, chat summaries, requests and responses."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Role = Literal["user", "assistant"]


def iso_timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with fixed microsecond width, so strings sort as the instants they name."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ChatMessage(BaseModel):
    """One stored message; `message_id` is a server-generated ULID (sorts by creation)."""

    message_id: str
    chat_id: str
    role: Role
    content: str
    created_at: str


class ChatSummary(BaseModel):
    """One entry of the chat list: title is the first user message cut to the title length."""

    id: str
    title: str
    last_message: str
    updated_at: str


class MessagesPage(BaseModel):
    """A page of a chat's messages, newest first; `next_cursor` is opaque, None on the last page."""

    messages: list[ChatMessage]
    next_cursor: str | None = None


class ChatsPage(BaseModel):
    """A page of the user's chats, newest activity first."""

    conversations: list[ChatSummary]
    next_cursor: str | None = None


class _Request(BaseModel):
    # Unknown fields (a client-sent user_id or message_id) are dropped, never trusted (spec 004 §3).
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


MAX_QUESTION_CHARS = 2000
"""The longest question the chat endpoints take (characters, after trimming): longer is a 400, before any
search, model call or write. Documented in README "Chat API" and the OpenAPI schema (maxLength)."""

CHAT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
"""Chat ids are server-made (uuid4); anything else names no chat."""

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class ChatRequest(_Request):
    """Body of POST /memories/chat and /memories/chat/verbose."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    chat_id: str | None = Field(default=None, pattern=CHAT_ID_PATTERN)

    @field_validator("question")
    @classmethod
    def _printable(cls, value: str) -> str:
        # NUL and other control characters cannot be stored (PostgreSQL text) and are never a question.
        if _CONTROL.search(value):
            raise ValueError("the question contains control characters")
        return value


class ListChatsRequest(_Request):
    """Body of POST /chats/list; a limit above the maximum is clamped by the repository."""

    cursor: str | None = Field(default=None, max_length=4096)
    limit: int | None = Field(default=None, ge=1)

    @field_validator("cursor", mode="before")
    @classmethod
    def _empty_cursor_is_none(cls, value: Any) -> Any:
        return value or None


class MessagesQuery(ListChatsRequest):
    """Query string of GET /chats/messages."""

    chat_id: str = Field(pattern=CHAT_ID_PATTERN)


class ChatResponse(BaseModel):
    """Response of POST /memories/chat; chat_id is None only when chat is unavailable (GPU starting)."""

    answer: str
    chat_id: str | None


class VerboseChatResponse(ChatResponse):
    """Response of POST /memories/chat/verbose: the answer plus the agent's trace."""

    trace: dict[str, Any] | None
