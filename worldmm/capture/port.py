"""The capture-state port: sessions and window buffers with an exactly-once close.

Adapters: `CaptureStore` (DynamoDB, the deployment) and `LocalCaptureStore` (object store + in-process
window table, `worldmm serve`). tests/integration/test_capture_state_contract.py is the contract both
meet (tests/integration/test_erase_user_contract.py their erase); tests/integration/test_capture_flow.py runs
the flow.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Set
from typing import Protocol

from worldmm.capture.models import CaptureSession, UploadKind, WindowState


class CaptureStatePort(Protocol):
    def reserve_session(self, user_id: str, day: str, limit: int) -> bool:
        """Count one more session of `user_id` on `day`; False (nothing counted) when `limit` are counted."""
        ...

    def reserve_window(self, user_id: str, session_id: str, window_index: int, day: str, limit: int) -> bool:
        """Count the window against `user_id`'s windows of `day` once (True again for a window already counted,
        whatever its day); False (nothing counted) when `limit` are counted."""
        ...

    def reserve_bytes(self, user_id: str, day: str, amount: int, limit: int) -> bool:
        """Count `amount` more bytes of upload URLs against `user_id`'s `day`; False (nothing counted) when that
        would pass `limit`."""
        ...

    def count_rerun(self, session_id: str, window_index: int, limit: int) -> bool:
        """Count one more re-run of a closed window's ingest; False (nothing counted) when `limit` are counted."""
        ...

    def create_session(self, session: CaptureSession) -> None: ...

    def get_session(self, session_id: str) -> CaptureSession | None: ...

    def mark_session_ended(self, session_id: str, ended_at: str) -> str: ...

    def record_open_upload(
        self, user_id: str, session_id: str, window_index: int, kind: UploadKind, frame: int | None, now: float
    ) -> WindowState | None: ...

    def record_late_upload(
        self, session_id: str, window_index: int, kind: UploadKind, frame: int | None, now: float
    ) -> bool: ...

    def close_window(self, session_id: str, window_index: int, reason: str, now: float) -> WindowState | None: ...

    def reopen_window(self, window: WindowState) -> None: ...

    def mark_ingest_invoked(self, session_id: str, window_index: int, frame_count: int, now: float) -> None: ...

    def get_window(self, session_id: str, window_index: int) -> WindowState | None: ...

    def open_window_indices(self, session_id: str) -> list[int]: ...

    def overdue_windows(self, opened_before: float) -> Iterator[tuple[str, int]]: ...

    def erase_windows(
        self, user_id: str, session_ids: Iterable[str], only: Mapping[str, Set[int]] | None = None
    ) -> dict[str, int]:
        """Erase the window buffers of `session_ids` (with `only`, just those windows of each session), each only
        while it names `user_id` or no one; how many went, per store of the forget audit (forget-me, span forget).

        The sessions themselves are the session catalog's to erase (worldmm.ingest.catalog), with the user's
        capture counters: both live in the catalog's store.
        """
        ...
