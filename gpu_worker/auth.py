"""Shared-secret authentication of worker requests (`X-Worker-Token`, or `Authorization: Bearer`)."""

from __future__ import annotations

import hmac

from fastapi import HTTPException, Request, status

from gpu_worker.settings import WorkerSettings

TOKEN_HEADER = "X-Worker-Token"


def presented_token(request: Request) -> str | None:
    """The secret the caller sent: the worker header, else a bearer token (what the OpenAI SDK sends)."""
    token = request.headers.get(TOKEN_HEADER)
    if token:
        return token
    auth = request.headers.get("Authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value:
        return value.strip()
    return None


def check_token(settings: WorkerSettings, presented: str | None) -> bool:
    """Constant-time comparison with the configured secret; no secret configured fails closed."""
    if settings.token is None:
        return settings.allow_unauthenticated
    if presented is None:
        return False
    return hmac.compare_digest(presented.encode(), settings.token.get_secret_value().encode())


def require_token(request: Request) -> None:
    """FastAPI dependency: 401 unless the request carries the worker's secret."""
    settings: WorkerSettings = request.app.state.settings
    if not check_token(settings, presented_token(request)):
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail="missing or wrong worker token",
            headers={"WWW-Authenticate": "Bearer"},
        )
