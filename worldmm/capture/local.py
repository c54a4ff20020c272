"""Capture state for the local profile (`worldmm serve`): sessions in the object store, window buffers in memory.

The sessions row is `sessions/{sessionId}/metadata.json` (`userId`, `createdAt`, `endedAt`), which the local
session catalog already reads for window timestamps. Window buffers live in this process behind one lock,
which gives the same exactly-once close the DynamoDB conditional write gives. A restart forgets the
buffers, not the uploads: a window of the session with objects in the store that this process never saw
is rebuilt from them when the session ends (so an `end` retried after a crash still ingests every
window), and an upload after a restart opens its window again (re-ingesting a window is a no-op).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Set

from worldmm.capture.models import CaptureSession, UploadKind, WindowState
from worldmm.capture.s3_events import parse_key
from worldmm.ingest.catalog.local import capture_quota_prefix
from worldmm.media.frames import list_window_indices, session_prefix, window_prefix
from worldmm.media.objects import ObjectNotFound, ObjectStore


class LocalCaptureStore:
    """The CaptureStore interface over the object store and an in-process window table."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self._lock = threading.RLock()
        self._windows: dict[tuple[str, int], WindowState] = {}
        self._invoked: dict[tuple[str, int], tuple[int, float]] = {}
        self._reruns: dict[tuple[str, int], int] = {}

    def _metadata_key(self, session_id: str) -> str:
        return f"{session_prefix(session_id)}metadata.json"

    # --- per-user quotas ------------------------------------------------------
    # A day's counters are `capture-quota/{sha256(userId)}/{day}.json` in the object store (forget-me erases
    # the user's prefix); the windows a session counted are its metadata.json's `quotaWindows`.
    def _counters(self, user_id: str, day: str) -> tuple[str, dict[str, int]]:
        key = f"{capture_quota_prefix(user_id)}{day}.json"
        try:
            doc = json.loads(self._store.get(key))
        except ObjectNotFound:
            doc = {}
        return key, {name: int(doc.get(name, 0)) for name in ("sessions", "windows", "bytes")}

    def _counted(self, user_id: str, day: str, counter: str, limit: int) -> bool:
        key, counters = self._counters(user_id, day)
        if counters[counter] >= limit:
            return False
        counters[counter] += 1
        self._store.put(key, json.dumps(counters).encode())
        return True

    def reserve_session(self, user_id: str, day: str, limit: int) -> bool:
        with self._lock:
            return self._counted(user_id, day, "sessions", limit)

    def reserve_window(self, user_id: str, session_id: str, window_index: int, day: str, limit: int) -> bool:
        with self._lock:
            doc = json.loads(self._store.get(self._metadata_key(session_id)))
            windows = set(doc.get("quotaWindows", []))
            if window_index in windows:
                return True
            if not self._counted(user_id, day, "windows", limit):
                return False
            doc["quotaWindows"] = sorted(windows | {window_index})
            self._store.put(self._metadata_key(session_id), json.dumps(doc).encode())
            return True

    def reserve_bytes(self, user_id: str, day: str, amount: int, limit: int) -> bool:
        with self._lock:
            key, counters = self._counters(user_id, day)
            if counters["bytes"] + amount > limit:
                return False
            counters["bytes"] += amount
            self._store.put(key, json.dumps(counters).encode())
            return True

    def count_rerun(self, session_id: str, window_index: int, limit: int) -> bool:
        with self._lock:
            done = self._reruns.get((session_id, window_index), 0)
            if done >= limit:
                return False
            self._reruns[(session_id, window_index)] = done + 1
            return True

    # --- sessions -------------------------------------------------------------
    def create_session(self, session: CaptureSession) -> None:
        with self._lock:
            if self.get_session(session.session_id) is not None:
                raise ValueError(f"session {session.session_id} exists")
            doc = {"sessionId": session.session_id, "userId": session.user_id, "createdAt": session.created_at}
            self._store.put(self._metadata_key(session.session_id), json.dumps(doc).encode())

    def get_session(self, session_id: str) -> CaptureSession | None:
        try:
            doc = json.loads(self._store.get(self._metadata_key(session_id)))
        except ObjectNotFound:
            return None
        if not isinstance(doc, dict) or not doc.get("userId"):
            return None  # an offline recording's metadata, not a capture session
        return CaptureSession(
            session_id=session_id,
            user_id=str(doc["userId"]),
            created_at=str(doc.get("createdAt", "")),
            ended_at=doc.get("endedAt"),
        )

    def mark_session_ended(self, session_id: str, ended_at: str) -> str:
        """Set `endedAt` once; returns the stored value (the first end wins)."""
        with self._lock:
            doc = json.loads(self._store.get(self._metadata_key(session_id)))
            if not doc.get("endedAt"):
                doc["endedAt"] = ended_at
                self._store.put(self._metadata_key(session_id), json.dumps(doc).encode())
            return str(doc["endedAt"])

    # --- windows --------------------------------------------------------------
    def record_open_upload(
        self, user_id: str, session_id: str, window_index: int, kind: UploadKind, frame: int | None, now: float
    ) -> WindowState | None:
        with self._lock:
            key = (session_id, window_index)
            window = self._windows.get(key) or WindowState(
                session_id=session_id, window_index=window_index, user_id=user_id, opened_at=now
            )
            if window.closed_at is not None:
                return None
            window = _with_upload(window, kind, frame)
            self._windows[key] = window
            return window

    def record_late_upload(
        self, session_id: str, window_index: int, kind: UploadKind, frame: int | None, now: float
    ) -> bool:
        with self._lock:
            key = (session_id, window_index)
            old = self._windows[key]
            self._windows[key] = _with_upload(old, kind, frame)
            return not old.has_audio if kind is UploadKind.AUDIO else frame not in old.frames

    def close_window(self, session_id: str, window_index: int, reason: str, now: float) -> WindowState | None:
        with self._lock:
            window = self._windows.get((session_id, window_index))
            if window is None or window.closed_at is not None:
                return None
            closed = window.model_copy(update={"closed_at": now, "close_reason": reason})
            self._windows[(session_id, window_index)] = closed
            return closed

    def reopen_window(self, window: WindowState) -> None:
        with self._lock:
            key = (window.session_id, window.window_index)
            current = self._windows.get(key)
            if current is not None and current.closed_at == window.closed_at:
                self._windows[key] = current.model_copy(update={"closed_at": None, "close_reason": None})

    def mark_ingest_invoked(self, session_id: str, window_index: int, frame_count: int, now: float) -> None:
        with self._lock:
            self._invoked[(session_id, window_index)] = (frame_count, now)

    def get_window(self, session_id: str, window_index: int) -> WindowState | None:
        with self._lock:
            return self._windows.get((session_id, window_index))

    def open_window_indices(self, session_id: str) -> list[int]:
        with self._lock:
            self._adopt_stored_windows(session_id)
            return sorted(i for (s, i), w in self._windows.items() if s == session_id and w.closed_at is None)

    def _adopt_stored_windows(self, session_id: str) -> None:
        """Buffers for the session's windows whose uploads landed before this process started."""
        session = self.get_session(session_id)
        if session is None:
            return
        for index in list_window_indices(self._store, session_id):
            if (session_id, index) in self._windows:
                continue
            window = WindowState(session_id=session_id, window_index=index, user_id=session.user_id)
            for key in self._store.list(window_prefix(session_id, index)):
                upload = parse_key(key)
                if upload is not None and upload.window_index == index:
                    window = _with_upload(window, upload.kind, upload.frame_index)
            self._windows[(session_id, index)] = window

    def overdue_windows(self, opened_before: float) -> Iterator[tuple[str, int]]:
        with self._lock:
            overdue = [
                key
                for key, w in self._windows.items()
                if w.closed_at is None and w.opened_at is not None and w.opened_at <= opened_before
            ]
        yield from overdue

    # --- forget-me ------------------------------------------------------------
    def erase_windows(
        self, user_id: str, session_ids: Iterable[str], only: Mapping[str, Set[int]] | None = None
    ) -> dict[str, int]:
        """Drop this process's buffers of those windows (each only while it names `user_id` or no one)."""
        sessions = set(session_ids)
        with self._lock:
            gone = [
                key
                for key, window in self._windows.items()
                if key[0] in sessions
                and (only is None or key[1] in only.get(key[0], set()))
                and window.user_id in (user_id, "")
            ]
            for key in gone:
                del self._windows[key]
                self._invoked.pop(key, None)
                self._reruns.pop(key, None)
        return {"memory.capture_windows": len(gone)} if gone else {}


def _with_upload(window: WindowState, kind: UploadKind, frame: int | None) -> WindowState:
    if kind is UploadKind.AUDIO:
        return window.model_copy(update={"has_audio": True})
    return window.model_copy(update={"frames": window.frames | {frame if frame is not None else 0}})
