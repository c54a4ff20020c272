"""The local gateway's keys (`worldmm.local_keys`), refused in the aws profile: there API Gateway's JWT
authorizer and presigned S3 URLs stand in their place."""

from __future__ import annotations

from worldmm.config import Profile
from worldmm.errors import ConfigurationError
from worldmm.gateway.settings import GatewaySettings
from worldmm.local_keys import KEY_FILE, LocalKeys, local_keys

GatewayKeys = LocalKeys

__all__ = ["KEY_FILE", "GatewayKeys", "gateway_keys"]


def gateway_keys(settings: GatewaySettings) -> GatewayKeys:
    """The local gateway's keys for `settings` (read or generated once per process and key file)."""
    if settings.worldmm_profile == Profile.AWS:
        raise ConfigurationError(
            "the local gateway (serve, token) has no keys in the aws profile: API Gateway's JWT authorizer "
            "and presigned S3 URLs stand in its place"
        )
    return local_keys(settings.jwt_dev_secret, settings.worldmm_home.expanduser().resolve())
