"""The chat API's values (spec 004 §2): messages, chat summaries, requests and responses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from worldmm.wire import MAX_JSON_INT, JsonInt

Role = Literal["user", "assistant"]


def iso_timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with fixed microsecond width, so strings sort as the instants they name."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_ANSWER = ConfigDict(json_schema_serialization_defaults_required=True)  # every field is always written


CURSOR_PATTERN = r"^(?:[A-Za-z0-9_-]{1,4000}\.[A-Za-z0-9_-]{43})?$"
"""A page cursor as the server issues it (`worldmm.chat.cursor`): base64url position, '.', base64url
HMAC-SHA256. Opaque: only a cursor the server issued for the same listing is accepted; empty is no cursor."""


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

    model_config = _ANSWER

    messages: list[ChatMessage]
    next_cursor: str | None = Field(default=None, pattern=CURSOR_PATTERN)


class ChatsPage(BaseModel):
    """A page of the user's chats, newest activity first."""

    model_config = _ANSWER

    conversations: list[ChatSummary]
    next_cursor: str | None = Field(default=None, pattern=CURSOR_PATTERN)


class _Request(BaseModel):
    # Unknown fields (a client-sent user_id or message_id) are dropped, never trusted (spec 004 §3).
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


MAX_QUESTION_CHARS = 2000
"""The longest question the chat endpoints take (characters, after trimming): longer is a 400, before any
search, model call or write. Documented in docs/operations.md ("Input limits") and the OpenAPI schema (maxLength)."""

CHAT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
"""Chat ids are server-made (uuid4); anything else names no chat."""

_CONTROL_CHARS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f"
QUESTION_PATTERN = rf"^[^{_CONTROL_CHARS}]*[^\s{_CONTROL_CHARS}][^{_CONTROL_CHARS}]*$"
"""A question holds something besides whitespace and no control characters (NUL and the like cannot be
stored in PostgreSQL text and are never a question); the server checks it after trimming."""



class ChatRequest(_Request):
    """Body of POST /memories/chat and /memories/chat/verbose."""

    question: str = Field(
        min_length=1, max_length=MAX_QUESTION_CHARS, pattern=QUESTION_PATTERN, examples=["Where did I leave my keys?"]
    )
    chat_id: str | None = Field(default=None, pattern=CHAT_ID_PATTERN)


class ListChatsRequest(_Request):
    """Body of POST /chats/list; a limit above the maximum is clamped by the repository."""

    cursor: str | None = Field(default=None, max_length=4096, pattern=CURSOR_PATTERN)
    limit: JsonInt | None = Field(default=None, ge=1, le=MAX_JSON_INT, examples=[20])

    @field_validator("cursor")
    @classmethod
    def _empty_cursor_is_none(cls, value: str | None) -> str | None:
        return value or None


class MessagesQuery(ListChatsRequest):
    """Query string of GET /chats/messages (every value arrives as text: `limit` is parsed from it)."""

    limit: int | None = Field(default=None, ge=1, le=MAX_JSON_INT)
    chat_id: str = Field(pattern=CHAT_ID_PATTERN)


class ChatResponse(BaseModel):
    """Response of POST /memories/chat; chat_id is None only when chat is unavailable (GPU starting)."""

    answer: str
    chat_id: str | None


class VerboseChatResponse(ChatResponse):
    """Response of POST /memories/chat/verbose: the answer plus the agent's trace."""

    trace: dict[str, Any] | None
