"""Bearer JWTs as API Gateway's JWT authorizer checks them (local profile: HS256 under the install's token key,
`worldmm.gateway.keys`)."""

from __future__ import annotations

import time
from typing import Any

from worldmm.errors import Unauthenticated
from worldmm.gateway.keys import gateway_keys
from worldmm.gateway.settings import GatewaySettings


def issue_token(user_id: str, settings: GatewaySettings, ttl_s: int = 3600) -> str:
    """A local JWT (HS256 under the gateway's token key) whose `sub` is `user_id`, valid for `ttl_s` seconds."""
    import jwt

    now = int(time.time())
    claims = {
        "sub": user_id,
        "iss": settings.jwt_issuer,
        "aud": settings.jwt_audience,
        "iat": now,
        "exp": now + ttl_s,
    }
    return jwt.encode(claims, gateway_keys(settings).token, algorithm="HS256")


def decode_token(token: str, settings: GatewaySettings) -> dict[str, Any]:
    """The claims of a valid token (signature, expiry, issuer, audience, `sub`); Unauthenticated if not."""
    import jwt

    try:
        claims: dict[str, Any] = jwt.decode(
            token.strip(),
            gateway_keys(settings).token,
            algorithms=["HS256"],
            audience=settings.jwt_audience,
            issuer=settings.jwt_issuer,
            options={"require": ["sub", "exp", "iss", "aud"]},
        )
    except jwt.PyJWTError as exc:
        raise Unauthenticated(f"invalid token: {exc}") from exc
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise Unauthenticated("invalid token: no subject")
    return claims


def verify_token(authorization: str | None, settings: GatewaySettings) -> dict[str, Any]:
    """The claims of a valid `Bearer` token; Unauthenticated if missing, expired or not ours."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("missing bearer token")
    return decode_token(token, settings)
