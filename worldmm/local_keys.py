"""The local profile's signing keys: one root key per install (or the operator's), never one written in source.

`worldmm serve` verifies bearer JWTs (HS256) and upload URLs (HMAC-SHA256) that `worldmm token` and the
capture API sign. Both keys are derived from one root key with HMAC-SHA256 under distinct labels (an upload
signature is never a token key, nor the other way round; the local profile's chat cursor key is a third):

- JWT_DEV_SECRET, when set: at least MIN_GATEWAY_KEY_CHARS characters of random text (32 random bytes,
  base64url-encoded; `python -c "import secrets; print(secrets.token_urlsafe(32))"`). Weaker keys are refused
  when the settings are read.
- otherwise 32 random bytes generated once into WORLDMM_HOME/gateway.key, readable by its owner alone. A key
  file that others can read, or that another user owns, is refused rather than trusted.

The aws profile has no gateway keys: API Gateway's JWT authorizer and presigned S3 URLs take their place.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from worldmm.errors import ConfigurationError

KEY_FILE = "gateway.key"
ROOT_KEY_BYTES = 32
_TOKEN_LABEL = b"worldmm/gateway/jwt-hs256/v1"
_UPLOAD_LABEL = b"worldmm/gateway/upload-url/v1"
_CURSOR_LABEL = b"worldmm/chat-cursor/v1"


@dataclass(frozen=True)
class LocalKeys:
    """The local profile's keys (`serve`, `token`, chat cursors); `explicit`: JWT_DEV_SECRET gave the root key."""

    token: bytes
    upload: bytes
    cursor: bytes  # chat page cursors (local profile; CURSOR_SECRET when given)
    explicit: bool


@lru_cache(maxsize=8)
def local_keys(explicit: str | None, home: Path) -> LocalKeys:
    """The local profile's keys from the root key: `explicit` (JWT_DEV_SECRET) or the install key in `home`
    (read or generated once per process and key file)."""
    root = explicit.encode() if explicit is not None else install_key(home)
    return LocalKeys(
        token=hmac.new(root, _TOKEN_LABEL, hashlib.sha256).digest(),
        upload=hmac.new(root, _UPLOAD_LABEL, hashlib.sha256).digest(),
        cursor=hmac.new(root, _CURSOR_LABEL, hashlib.sha256).digest(),
        explicit=explicit is not None,
    )


def install_key(home: Path) -> bytes:
    """The install's root key in `home`/gateway.key: generated on first use (mode 0600), then read back.

    Two processes starting at once agree: the key is written to a private temporary file and linked into
    place, so the file is either absent or whole, and the loser of the race reads the winner's key.
    """
    path = home / KEY_FILE
    if not path.exists():
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = home / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w") as out:
                out.write(secrets.token_hex(ROOT_KEY_BYTES) + "\n")
            with contextlib.suppress(FileExistsError):  # another process linked its key first: read that
                os.link(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
    return _read_private(path)


def _read_private(path: Path) -> bytes:
    info = path.stat()
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigurationError(f"{path} is readable by others: `chmod 600 {path}` (or delete it for a new key)")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise ConfigurationError(f"{path} belongs to another user: it is not this install's key")
    text = path.read_text().strip()
    try:
        key = bytes.fromhex(text)
    except ValueError as exc:
        raise ConfigurationError(f"{path} is not a key this install wrote (delete it for a new one)") from exc
    if len(key) < ROOT_KEY_BYTES:
        raise ConfigurationError(f"{path} holds fewer than {ROOT_KEY_BYTES} bytes (delete it for a new key)")
    return key
