"""Presigned PUT URLs for the local profile: the gateway's `/uploads/{key}` stands in for the S3 bucket.

A URL carries the key, an expiry and the content type, signed with HMAC-SHA256 under the gateway's upload key
(`worldmm.gateway.keys`, derived apart from the token key),
as a presigned S3 URL carries its signature: the gateway accepts a PUT only for what was signed, until it
expires. Same call shape as boto3's `generate_presigned_url`, so `CaptureService` takes either.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

UPLOADS_PATH = "/uploads/"


class LocalUploadSigner:
    """Signs and checks local upload URLs under `base_url` (what the phone reaches the gateway at)."""

    def __init__(self, base_url: str, secret: bytes, *, clock: Callable[[], float] = time.time) -> None:
        self.base_url = base_url.rstrip("/")
        self._secret = secret
        self._clock = clock

    def _signature(self, key: str, expires: int, content_type: str) -> str:
        message = f"PUT\n{key}\n{expires}\n{content_type}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def generate_presigned_url(self, ClientMethod: str, Params: dict[str, Any], ExpiresIn: int) -> str:
        """`{base_url}/uploads/{key}?expires=…&contentType=…&signature=…` for a `put_object`."""
        if ClientMethod != "put_object":
            raise ValueError("only put_object URLs are signed locally")
        key, content_type = str(Params["Key"]), str(Params.get("ContentType", ""))
        expires = int(self._clock()) + int(ExpiresIn)
        query = urlencode(
            {"expires": expires, "contentType": content_type, "signature": self._signature(key, expires, content_type)}
        )
        return f"{self.base_url}{UPLOADS_PATH}{quote(key)}?{query}"

    def check(self, key: str, expires: str | None, content_type: str | None, signature: str | None) -> bool:
        """Whether a PUT of `key` with this content type carries a valid, unexpired signature."""
        try:
            deadline = int(expires or "")
        except ValueError:
            return False
        if deadline < self._clock() or signature is None or not signature.isascii():
            return False  # compare_digest takes ASCII text only: anything else is no signature of ours
        expected = self._signature(key, deadline, (content_type or "").split(";")[0].strip())
        return hmac.compare_digest(expected, signature)
