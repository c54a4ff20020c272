"""Typed errors of the library; handlers map them to status codes in one place."""

from __future__ import annotations

from pydantic import BaseModel


class FieldError(BaseModel):
    """One invalid field of a 400: pydantic's error type, where it is, and what is wrong."""

    type: str
    loc: list[str | int]
    msg: str


class ErrorBody(BaseModel):
    """The JSON body of every error answer, the API's and API Gateway's own (`{"message": ...}`)."""

    message: str
    errors: list[FieldError] | None = None


class WorldMMError(Exception):
    """Base of every error the library raises on purpose."""

    status_code = 500


class BadRequest(WorldMMError):
    """The caller sent something invalid (HTTP 400)."""

    status_code = 400


class Unauthenticated(WorldMMError):
    """No valid identity on the request (HTTP 401)."""

    status_code = 401


class Forbidden(WorldMMError):
    """The identity may not touch this resource, or it does not exist (HTTP 403)."""

    status_code = 403


class Conflict(WorldMMError):
    """The request does not fit the resource's state (an ended or expired capture session) (HTTP 409)."""

    status_code = 409


class QuotaExceeded(WorldMMError):
    """The caller used up a per-user allowance (sessions or windows a day); retry after `retry_after_s` (HTTP 429)."""

    status_code = 429

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = max(1, retry_after_s)


class GpuUnavailableError(WorldMMError):
    """The GPU worker is absent, stopped or not answering; retry later (routes to the DLQ)."""

    status_code = 503

    def __init__(self, message: str, *, sentinel: str | None = None) -> None:
        super().__init__(message)
        self.sentinel = sentinel


class GpuRequestError(WorldMMError):
    """The GPU worker rejected the request itself (bad image, too many frames); retrying will not help."""

    status_code = 400


class ModelOutputError(WorldMMError):
    """A model answered with something that could not be parsed into the expected shape."""


class UnavailableError(WorldMMError):
    """An optional capability (visual encoder, graph cache) is not configured or not reachable."""

    status_code = 503


class TruncatedOutputError(ModelOutputError):
    """A model's answer was cut off by its output token limit (`finish_reason == "length"`), even after a
    retry with more room: a fragment, never stored as content."""


class MemoryUnavailableError(WorldMMError):
    """The memory store cannot be reached (database down, connection lost): chat answers nothing and saves
    nothing rather than say "I don't remember"."""

    status_code = 503
    expose = True  # the message is written for the caller
    retry_after_s = 30
    MESSAGE = "Your memories cannot be reached right now, so nothing was answered or saved. Try again in a minute."

    def __init__(self, message: str = MESSAGE) -> None:
        super().__init__(message)


class UserMovingError(MemoryUnavailableError):
    """The user's memory is being moved to another database cell (or has just left this one): nothing was read
    or written; the next request goes to the cell the placement map names (HTTP 503, Retry-After)."""

    retry_after_s = 5
    MESSAGE = "Your memories are being moved and cannot be reached for a moment; nothing was saved. Try again shortly."

    def __init__(self, message: str = MESSAGE) -> None:
        super().__init__(message)


class ConfigurationError(WorldMMError):
    """The settings cannot work in this profile (a default secret in the aws profile, a missing one)."""
