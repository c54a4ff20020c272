"""Presigned uploads for the local profile: the gateway's `/uploads/` stands in for the S3 bucket.

A presigned POST (what capture hands out) carries the key, an expiry, the content type and the largest length
as form fields, signed with HMAC-SHA256 under the gateway's upload key (`worldmm.gateway.keys`, derived apart
from the token key), as an S3 POST policy carries its signature: the gateway takes a POST only for what was
signed, until it expires, and no longer a body than signed. Same call shape as boto3's
`generate_presigned_post`, so `CaptureService` takes either. A presigned PUT (`generate_presigned_url`,
`/uploads/{key}`) is signed the same way, without a length: the gateway bounds its body by the key's kind.
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

    def generate_presigned_post(
        self,
        Bucket: str,
        Key: str,
        Fields: dict[str, Any] | None = None,
        Conditions: list[Any] | None = None,
        ExpiresIn: int = 3600,
    ) -> dict[str, Any]:
        """`{url: {base_url}/uploads/, fields: {key, Content-Type, expires, max-bytes, signature}}`; the length
        bound is the `content-length-range` condition's upper end."""
        content_type = str((Fields or {}).get("Content-Type", ""))
        ranges = [c for c in Conditions or [] if isinstance(c, list | tuple) and c and c[0] == "content-length-range"]
        if not ranges:
            raise ValueError("a local upload POST needs a content-length-range condition")
        max_bytes = int(ranges[0][2])
        expires = int(self._clock()) + int(ExpiresIn)
        signature = self._post_signature(Key, expires, content_type, max_bytes)
        fields = {
            "key": Key,
            "Content-Type": content_type,
            "expires": str(expires),
            "max-bytes": str(max_bytes),
            "signature": signature,
        }
        return {"url": f"{self.base_url}{UPLOADS_PATH}", "fields": fields}

    def _post_signature(self, key: str, expires: int, content_type: str, max_bytes: int) -> str:
        message = f"POST\n{key}\n{expires}\n{content_type}\n{max_bytes}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def check_post(self, fields: dict[str, str]) -> int | None:
        """The signed length bound when a POST's form fields carry a valid, unexpired signature; else None."""
        signature, key = fields.get("signature"), fields.get("key", "")
        try:
            deadline, max_bytes = int(fields.get("expires", "")), int(fields.get("max-bytes", ""))
        except ValueError:
            return None
        if deadline < self._clock() or signature is None or not signature.isascii():
            return None
        expected = self._post_signature(key, deadline, fields.get("Content-Type", ""), max_bytes)
        return max_bytes if hmac.compare_digest(expected, signature) else None

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
