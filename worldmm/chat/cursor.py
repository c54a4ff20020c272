"""Opaque pagination cursors: a position bound to its listing (user, chat) and signed with HMAC.

A cursor is `base64url(json).base64url(hmac_sha256)`. Decoding checks the signature and that the
cursor was issued for the same listing, so a cursor from another chat or user, or an edited one, is
a `BadRequest` and can never position a query inside someone else's data.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from worldmm.errors import BadRequest

_INVALID = "invalid cursor"


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(secret: str, payload: bytes) -> bytes:
    return hmac.new(secret.encode("utf-8"), payload, hashlib.sha256).digest()


def encode_cursor(secret: str, scope: list[str], position: dict[str, str]) -> str:
    """Sign `position` for the listing named by `scope` (e.g. ["messages", user_id, chat_id])."""
    payload = json.dumps({"s": scope, "p": position}, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return f"{_b64encode(payload)}.{_b64encode(_signature(secret, payload))}"


def decode_cursor(secret: str, scope: list[str], cursor: str) -> dict[str, str]:
    """The position inside `cursor`, or BadRequest if it is malformed, tampered or for another listing."""
    try:
        body, _, mac = cursor.partition(".")
        payload = _b64decode(body)
        signature = _b64decode(mac)
    except (ValueError, binascii.Error) as exc:
        raise BadRequest(_INVALID) from exc
    if not hmac.compare_digest(signature, _signature(secret, payload)):
        raise BadRequest(_INVALID)
    try:
        decoded: Any = json.loads(payload)
    except ValueError as exc:
        raise BadRequest(_INVALID) from exc
    if not isinstance(decoded, dict) or decoded.get("s") != scope:
        raise BadRequest(_INVALID)
    position = decoded.get("p")
    if not isinstance(position, dict):
        raise BadRequest(_INVALID)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in position.items()):
        raise BadRequest(_INVALID)
    return position
