"""The settings the local gateway (`worldmm serve`) reads: its keys and tokens, the upload bounds it checks and
states in its API document, the bucket its uploads land in, what its MCP tools send back, and the function a
forget request starts. Built once per process by the composition root
(`Services.settings_of(GatewaySettings)`)."""

from __future__ import annotations

from pathlib import Path

from worldmm.config import ComponentSettings, Profile, Settings


class GatewaySettings(ComponentSettings):
    """Each field is the Settings field (or derived value) of the same name; docs/configuration.md says what it does."""

    worldmm_profile: Profile
    worldmm_home: Path
    # the bearer tokens it issues and checks
    jwt_dev_secret: str | None
    jwt_issuer: str
    jwt_audience: str
    # uploads: their bounds (checked and stated in /openapi.json) and where they land
    capture_expected_frames: int
    capture_max_window_index: int
    capture_max_frame_bytes: int
    capture_max_audio_bytes: int
    frames_bucket: str
    # what its MCP tools send back and start
    memory_text_max_chars: int
    mcp_answer_max_chars: int
    forget_function_name: str

    @classmethod
    def defaults(cls) -> GatewaySettings:
        """The settings' defaults, never the environment's (the committed API document states them)."""
        return cls.of(Settings.model_construct())
