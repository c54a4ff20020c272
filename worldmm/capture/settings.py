"""The settings capture reads: the window, the upload URLs and their limits, the daily quotas, where uploads go
and which functions ingest them. Built once by the composition root (`Services.capture_settings`)."""

from __future__ import annotations

from worldmm.config import ComponentSettings


class CaptureSettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    window_seconds: int
    capture_expected_frames: int
    capture_max_window_index: int
    capture_close_after_s: int
    # upload URLs: their lifetime, their size limits, how long after a session's end they are still given
    capture_url_expiry_s: int
    capture_presign_after_end_s: int
    capture_max_frame_bytes: int
    capture_max_audio_bytes: int
    # a user's daily quotas
    capture_max_sessions_per_day: int
    capture_max_windows_per_day: int
    capture_max_window_reruns: int
    capture_bytes_per_day: int
    # where uploads go and which functions take a window on
    frames_bucket: str
    ingest_function_name: str
    retrigger_function_name: str
