"""The settings chat reads: which model answers, page sizes, titles and previews, the key cursors are signed with
(fetched when a cursor is first signed or checked), the chat tables, and the GPU worker client's own. Built once
by the composition root (`Services.chat_settings`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from worldmm.config import ComponentSettings, LLMProvider
from worldmm.gpu.settings import GpuClientSettings


class ChatSettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    llm_provider: LLMProvider
    chat_page_default: int
    chat_page_max: int
    chat_title_chars: int
    chat_preview_chars: int
    cursor_signing_secret: Callable[[], str]
    chats_table: str
    messages_table: str
    gpu: GpuClientSettings


class ChatSettingsPorts(Protocol):
    """Chat's settings (and no other setting)."""

    @property
    def chat_settings(self) -> ChatSettings: ...
