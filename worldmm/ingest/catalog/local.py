"""The session catalog in the object store (the local profile): `sessions/{id}/metadata.json` and window prefixes.

The same store holds each user's capture counters under `capture_quota_prefix(user_id)` (written by the local
capture state, worldmm.capture.local); the catalog erases them with the user's entries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace

from worldmm.ingest.catalog.port import SessionInfo, info_from_item
from worldmm.media.frames import list_window_indices, session_prefix
from worldmm.media.objects import ErasableObjectStore, ObjectNotFound


def capture_quota_prefix(user_id: str) -> str:
    """The object-store prefix of `user_id`'s capture counters (`{prefix}{day}.json`), named by a hash of the
    id (an id may hold characters a path may not)."""
    import hashlib

    return f"capture-quota/{hashlib.sha256(user_id.encode()).hexdigest()}/"


class StoreSessionCatalog:
    """metadata.json and window prefixes in the object store (local profile)."""

    def __init__(self, store: ErasableObjectStore) -> None:
        self._store = store

    def get(self, session_id: str) -> SessionInfo | None:
        try:
            doc = json.loads(self._store.get(f"{session_prefix(session_id)}metadata.json"))
        except ObjectNotFound:
            doc = None
        info = info_from_item(session_id, doc) if isinstance(doc, dict) else SessionInfo(session_id)
        if info.window_count is None and not info.frame_counts:
            indices = list_window_indices(self._store, session_id)
            if indices:
                info = replace(info, window_count=max(indices) + 1)
        if doc is None and info.window_count is None:
            return None
        return info

    def user_sessions(self, user_id: str) -> list[str]:
        """The sessions whose metadata.json names the user (`userId`, or `user_id` in a recording's)."""
        owned: list[str] = []
        for key in self._store.list("sessions/"):
            parts = key.split("/")
            if len(parts) != 3 or parts[2] != "metadata.json":
                continue
            if self._owner(key) == user_id:
                owned.append(parts[1])
        return sorted(owned)

    def erase_user(self, user_id: str, session_ids: Iterable[str]) -> dict[str, int]:
        """An entry left of `session_ids` goes with its folder (normally it went with the session's objects
        already); then the user's counters."""
        left = 0
        for sid in session_ids:
            key = f"{session_prefix(sid)}metadata.json"
            if "/" not in sid and self._owner(key) == user_id:
                left += self._store.delete_prefix(session_prefix(sid))
        counts = {"objects.capture_quotas": self._store.delete_prefix(capture_quota_prefix(user_id))}
        if left:
            counts["objects.files"] = left
        return counts

    def _owner(self, key: str) -> str | None:
        try:
            doc = json.loads(self._store.get(key))
        except (ValueError, KeyError):
            return None
        owner = doc.get("userId", doc.get("user_id")) if isinstance(doc, dict) else None
        return owner if isinstance(owner, str) else None
