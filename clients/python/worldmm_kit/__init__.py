"""What the phone app needs beyond the generated `worldmm_client`: the document cannot say these.

- `connect(base_url, token)`: the generated `AuthenticatedClient` over a transport that sends a 429 or 503
  again after its `Retry-After` (a longer wait than `max_retry_after_s` is returned to the app instead).
- `upload(upload, body)`: a presigned upload, its form fields in order, then the file.
- `pages(fetch, items)`: every item of a cursor-paged listing.
- `events(base_url, token)`: the caller's app events from `GET /events`, reconnecting with Last-Event-ID.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import httpx

from worldmm_client import AuthenticatedClient
from worldmm_client.models import SessionProcessed, WindowFailed, WindowProcessed

RETRIED = frozenset({429, 503})
P = TypeVar("P")
T = TypeVar("T")
AppEvent = WindowProcessed | WindowFailed | SessionProcessed
_EVENT_MODELS: dict[str, Any] = {m.__name__: m for m in (WindowProcessed, WindowFailed, SessionProcessed)}


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a `Retry-After` header (seconds or an HTTP date); None when absent or unreadable."""
    if not value or not value.strip():
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        at = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, at - (time.time() if now is None else now))


class RetryTransport(httpx.BaseTransport):
    """Sends a 429/503 request again after its Retry-After, at most `retries` times."""

    def __init__(
        self,
        inner: httpx.BaseTransport | None = None,
        *,
        retries: int = 3,
        max_retry_after_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.inner = inner or httpx.HTTPTransport()
        self.retries = retries
        self.max_retry_after_s = max_retry_after_s
        self.sleep = sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        attempt = 0
        while True:
            response = self.inner.handle_request(request)
            if response.status_code not in RETRIED or attempt >= self.retries:
                return response
            after = retry_after_s(response.headers.get("retry-after"))
            after = float(2**attempt) if after is None else after
            if after > self.max_retry_after_s:
                return response
            response.close()
            self.sleep(after)
            attempt += 1

    def close(self) -> None:
        self.inner.close()


def connect(base_url: str, token: str, *, transport: httpx.BaseTransport | None = None, **retry: Any) -> AuthenticatedClient:
    """The generated client with the bearer token and the retrying transport."""
    return AuthenticatedClient(
        base_url=base_url, token=token, httpx_args={"transport": RetryTransport(transport, **retry)}
    )


def upload(presigned: Any, body: bytes, *, client: httpx.Client | None = None) -> int:
    """One presigned upload (`PresignedUpload`): a multipart POST of its fields in order, then `file`; the
    HTTP status (204 when stored). No token: the signature is the authority."""
    fields = presigned.fields.to_dict() if hasattr(presigned.fields, "to_dict") else dict(presigned.fields or {})
    content_type = fields.get("Content-Type", "application/octet-stream")
    http = client or httpx.Client(timeout=60)
    try:
        response = http.post(presigned.url, data=fields, files={"file": ("upload", body, content_type)})
    finally:
        if client is None:
            http.close()
    return response.status_code


def pages(fetch: Callable[[str | None], P], items: Callable[[P], list[T]]) -> Iterator[T]:
    """Every item of a listing: `fetch(cursor)` gets one page (cursor None first), `items` picks its entries."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from items(page)
        cursor = getattr(page, "next_cursor", None) or None
        if not isinstance(cursor, str):
            return


def events(
    base_url: str,
    token: str,
    *,
    after: str | None = None,
    wait: int = 5,
    until: Callable[[], bool] = lambda: False,
) -> Iterator[AppEvent]:
    """The caller's app events (the local gateway's `GET /events`), in order, reconnecting with Last-Event-ID
    until `until()` is true between two streams. Raises httpx.HTTPStatusError on a 4xx (a bad token: 401)."""
    last = after
    with httpx.Client(base_url=base_url, timeout=httpx.Timeout(wait + 30, connect=10)) as http:
        while not until():
            headers = {"Authorization": f"Bearer {token}"}
            if last is not None:
                headers["Last-Event-ID"] = last
            with http.stream("GET", "/events", params={"wait": wait}, headers=headers) as response:
                response.raise_for_status()
                for message in _messages(response.iter_lines()):
                    last = message.get("id", last)
                    if "data" in message:
                        data = json.loads(message["data"])
                        yield _EVENT_MODELS[data["type"]].from_dict(data)


def _messages(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    message: dict[str, str] = {}
    for line in lines:
        if line == "":
            if message:
                yield message
            message = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            message[name] = f"{message['data']}\n{value}" if name == "data" and "data" in message else value
