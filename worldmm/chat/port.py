"""The chat store port (spec 004 ChatRepository): adapters in `postgres_repository` and `dynamo_repository`
(chosen by the composition root, `worldmm.services`), the paging rules they share in `paging`.

Both adapters keep the same contract: the chats registry is the ownership check (a chat that is not
the caller's is indistinguishable from one that does not exist: `Forbidden`), message ids are ULIDs
generated here, messages are read newest first, chats are listed newest activity first, pages hold
the default 20 and at most 50 items, and cursors are opaque, signed and bound to their listing.
"""

from __future__ import annotations

from typing import Protocol

from worldmm.chat.models import ChatMessage, ChatsPage, MessagesPage, Role


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

    def save_turn(self, user_id: str, chat_id: str | None, question: str, answer: str) -> str:
        """Append a question and its answer together, or neither (a new chat when `chat_id` is None, made
        in the same write); returns the chat id. Forbidden if `chat_id` is not the caller's."""
        ...

    def get_messages(
        self, user_id: str, chat_id: str, cursor: str | None = None, limit: int | None = None
    ) -> MessagesPage:
        """A page of the chat's messages, newest first; Forbidden if the chat is not the caller's."""
        ...

    def list_chats(self, user_id: str, cursor: str | None = None, limit: int | None = None) -> ChatsPage:
        """A page of the caller's chats, newest activity first."""
        ...

    def erase_user(self, user_id: str) -> dict[str, int]:
        """Erase every chat of `user_id` with its messages, nothing of anyone else's (forget-me); how many items
        went, per store of the forget audit. Idempotent: a second run finds nothing."""
        ...
