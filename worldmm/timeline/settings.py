"""The settings the memories a wearer sees read: page sizes, the media URLs' lifetime, the window length, and the
key cursors are signed with (fetched only when a cursor is first signed or checked). Built once by the
composition root (`Services.timeline_settings`)."""

from __future__ import annotations

from collections.abc import Callable

from worldmm.config import ComponentSettings


class TimelineSettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    window_seconds: int
    memory_page_default: int
    memory_page_max: int
    memory_media_url_expiry_s: int
    cursor_signing_secret: Callable[[], str]
