"""The settings ingest reads: the window, attempts and leases, the reaper and the dead-letter queue, how many
windows run at once, what enrichment sends, and captioning's own settings. Built once by the composition root
(`Services.ingest_settings`)."""

from __future__ import annotations

from typing import Protocol

from worldmm.config import ComponentSettings, LLMMode, Profile
from worldmm.media.settings import CaptionSettings


class IngestSettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    worldmm_profile: Profile
    window_seconds: int
    # claims, attempts, the reaper and the dead-letter queue
    ingest_claim_lease_s: int
    ingest_max_attempts: int
    reaper_pending_after_s: int
    reaper_max_windows: int
    dlq_visibility_extension_s: int
    ingest_dlq_url: str | None
    ingest_function_name: str
    ingest_requires_gpu: bool | None
    # how many windows and summaries run at once
    llm_mode: LLMMode
    batch_max_requests: int
    ingest_concurrency: int
    text_ingest_chunk: int
    text_ingest_summary_concurrency: int
    # what a window's enrichment reads and sends
    sample_frames: int
    enrich_audio_only: bool
    speaker_labels: bool
    visual_embedding_dim: int
    caption: CaptionSettings

    @property
    def gpu_required(self) -> bool:
        """Whether a window with frames needs the GPU worker up (INGEST_REQUIRES_GPU; default: aws profile)."""
        if self.ingest_requires_gpu is not None:
            return self.ingest_requires_gpu
        return self.worldmm_profile == Profile.AWS


class IngestSettingsPorts(Protocol):
    """Ingest's settings (and no other setting)."""

    @property
    def ingest_settings(self) -> IngestSettings: ...
