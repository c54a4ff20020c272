"""The object store port (frames, audio): S3 in production, a directory with the same key layout locally."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Protocol


class ObjectNotFound(KeyError):
    """No object under that key."""


class ObjectStore(Protocol):
    """Raw frames and audio, keyed like S3 (`sessions/{sessionId}/window_{n}/frame_0001.jpg`)."""

    def get(self, key: str) -> bytes: ...

    def put(self, key: str, data: bytes) -> None: ...

    def list(self, prefix: str) -> list[str]:
        """Keys under `prefix`, sorted."""
        ...

    def exists(self, key: str) -> bool: ...


class S3ObjectStore:
    """ObjectStore on one S3 bucket (honours AWS_ENDPOINT_URL through boto3)."""

    def __init__(self, bucket: str, client: Any | None = None, *, page_size: int = 1000) -> None:
        import boto3

        self.bucket = bucket
        self.client = client or boto3.client("s3")
        self.page_size = page_size

    def get(self, key: str) -> bytes:
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
        except self.client.exceptions.NoSuchKey as exc:
            raise ObjectNotFound(key) from exc
        data: bytes = body.read()
        return data

    def put(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def list(self, prefix: str) -> list[str]:
        keys: list[str] = []
        paginator = self.client.get_paginator("list_objects_v2")
        pages = paginator.paginate(
            Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": self.page_size}
        )
        for page in pages:
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
        return sorted(keys)

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"404", "NoSuchKey", "NotFound"}:
                return False
            raise
        return True


class DirectoryObjectStore:
    """ObjectStore on a directory: key `a/b/c.jpg` is the file `<root>/a/b/c.jpg`."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root) or not key or key.startswith("/"):
            raise ValueError(f"invalid object key {key!r}")
        return path

    def get(self, key: str) -> bytes:
        path = self._path(key)
        if not path.is_file():
            raise ObjectNotFound(key)
        return path.read_bytes()

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A writer-unique temporary name: concurrent puts of one key must not share a temp file.
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
        try:
            tmp.write_bytes(data)
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)

    def list(self, prefix: str) -> list[str]:
        # Walk only the deepest directory the prefix names, not the whole store.
        folder = prefix.rpartition("/")[0]
        start = self._path(folder) if folder else self.root
        if not start.is_dir():
            return []
        keys = (
            p.relative_to(self.root).as_posix()
            for p in start.rglob("*")
            if p.is_file() and not p.name.endswith(".part")
        )
        return sorted(k for k in keys if k.startswith(prefix))

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()
