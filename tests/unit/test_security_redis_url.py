"""Issue 64, Low: REDIS_URL, which can carry a password, is treated as a secret and must use TLS when deployed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from worldmm.config import Profile, Settings

pytestmark = pytest.mark.unit

SECRET = "s3cr3t-redis-password"


def test_security_redis_url_in_clear_is_refused_in_the_aws_profile_fails_on_todays_code() -> None:
    with pytest.raises(ValidationError, match="rediss://"):
        Settings(worldmm_profile=Profile.AWS, redis_url=f"redis://:{SECRET}@cache.internal:6379/0")


def test_security_redis_url_over_tls_or_to_loopback_is_taken() -> None:
    assert Settings(worldmm_profile=Profile.AWS, redis_url=f"rediss://:{SECRET}@cache.internal:6379/0").redis_url
    assert Settings(worldmm_profile=Profile.AWS, redis_url="redis://127.0.0.1:6380/0").redis_url
    assert Settings(redis_url="redis://cache.lan:6379/0").redis_url  # the local profile: the owner's choice


def test_security_redis_url_is_kept_out_of_the_settings_repr_fails_on_todays_code() -> None:
    settings = Settings(redis_url=f"rediss://:{SECRET}@cache.internal:6379/0")
    assert SECRET not in repr(settings) and SECRET not in str(settings)
