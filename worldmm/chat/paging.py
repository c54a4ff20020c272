"""What both chat adapters share: page sizes, titles, previews, message ids and signed cursor scopes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import ulid

from worldmm.chat.cursor import decode_cursor, encode_cursor
from worldmm.chat.settings import ChatSettings
from worldmm.errors import BadRequest

NOT_YOURS = "chat not found or not yours"

T = TypeVar("T")


class ChatRules:
    """What both adapters share: page sizes, titles, previews, ids and cursor scopes."""

    def __init__(self, settings: ChatSettings) -> None:
        self.settings = settings
        self._cursor_key: str | None = None  # fetched when a cursor is first signed or checked, never before

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

    def _cursor_secret(self) -> str:
        if self._cursor_key is None:
            self._cursor_key = self.settings.cursor_signing_secret()  # aws: refuses without a cursor key
        return self._cursor_key

    def encode(self, scope: list[str], position: dict[str, str]) -> str:
        return encode_cursor(self._cursor_secret(), scope, position)

    def decode(self, scope: list[str], cursor: str | None) -> dict[str, str] | None:
        return None if cursor is None else decode_cursor(self._cursor_secret(), scope, cursor)

    def page(
        self, rows: list[T], size: int, scope: list[str], position: Callable[[T], dict[str, str]]
    ) -> tuple[list[T], str | None]:
        """The first `size` of `rows` (read one past a page) and the cursor to the next page: the last row's
        `position`, signed for `scope`; None when nothing follows."""
        page = rows[:size]
        return page, self.encode(scope, position(page[-1])) if len(rows) > size else None


def messages_scope(user_id: str, chat_id: str) -> list[str]:
    return ["messages", user_id, chat_id]


def chats_scope(user_id: str) -> list[str]:
    return ["chats", user_id]


def parse_timestamp(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError as exc:
        raise BadRequest("invalid cursor") from exc
