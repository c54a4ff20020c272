"""The session catalog in the object store (the local profile): `sessions/{id}/metadata.json` and window prefixes."""

from __future__ import annotations

import json
from dataclasses import replace

from worldmm.ingest.sessions.port import SessionInfo, info_from_item
from worldmm.media.frames import list_window_indices, session_prefix
from worldmm.media.objects import ObjectNotFound, ObjectStore


class StoreSessionCatalog:
    """metadata.json and window prefixes in the object store (local profile)."""

    def __init__(self, store: ObjectStore) -> None:
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
