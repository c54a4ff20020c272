"""The object store port (frames, audio): S3 in production, a directory with the same key layout locally."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
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


class ErasableObjectStore(ObjectStore, Protocol):
    """An object store that can erase folders: both adapters (not a read-only view such as a session directory)."""

    def delete_prefix(self, prefix: str) -> int:
        """Erase every object under the folder `prefix` names; how many went."""
        ...

    def erase_prefixes(self, prefixes: Iterable[str]) -> dict[str, int]:
        """Erase every object under each folder of `prefixes` (forget-me); how many went, under the name the
        forget audit gives this store."""
        ...


def _erase_prefixes(store: ErasableObjectStore, name: str, prefixes: Iterable[str]) -> dict[str, int]:
    wanted = list(prefixes)
    return {name: sum(store.delete_prefix(p) for p in wanted)} if wanted else {}


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

    def delete_prefix(self, prefix: str) -> int:
        """Erase every object under `prefix`, every version and delete marker included (forget-me: a
        versioned bucket keeps a "deleted" object's versions); returns how many versions went."""
        if not prefix.endswith("/"):
            raise ValueError(f"refusing to erase {prefix!r}: a prefix must name a folder")
        deleted = 0
        paginator = self.client.get_paginator("list_object_versions")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            versions: list[Any] = [
                {"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
                if v["Key"].startswith(prefix)
            ]
            for start in range(0, len(versions), 1000):
                batch = versions[start : start + 1000]
                response = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
                errors = response.get("Errors") or []
                if errors:
                    raise RuntimeError(f"{len(errors)} objects under {prefix} could not be erased: {errors[0]}")
                deleted += len(batch)
        return deleted

    def erase_prefixes(self, prefixes: Iterable[str]) -> dict[str, int]:
        """Every version under each prefix; counted as `s3.objects`."""
        return _erase_prefixes(self, "s3.objects", prefixes)

    def presign_get(self, key: str, expires_s: int) -> str:
        """A GET URL for `key` that works for `expires_s` seconds."""
        url: str = self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_s
        )
        return url

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
    """ObjectStore on a directory: key `a/b/c.jpg` is the file `<root>/a/b/c.jpg`.

    Keys are checked by their text, as S3 keys are: no empty, `.` or `..` segment, no leading `/`, no NUL
    or backslash, so a key never names a file outside the root (only this process writes under it).
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._root = str(self.root)

    def _path(self, key: str) -> str:
        if not key or key.startswith("/") or "\\" in key or "\x00" in key:
            raise ValueError(f"invalid object key {key!r}")
        if any(part in ("", ".", "..") for part in key.split("/")):
            raise ValueError(f"invalid object key {key!r}")
        return f"{self._root}/{key}"

    def get(self, key: str) -> bytes:
        try:
            with open(self._path(key), "rb") as file:
                return file.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(key) from None

    def put(self, key: str, data: bytes) -> None:
        path = Path(self._path(key))
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
        start = self._path(folder) if folder else self._root
        skip = len(self._root) + 1
        keys = [
            f"{directory[skip:]}/{name}" if len(directory) > skip else name
            for directory, _, files in os.walk(start)
            for name in files
            if not name.endswith(".part")
        ]
        return sorted(k for k in keys if k.startswith(prefix))

    def exists(self, key: str) -> bool:
        return os.path.isfile(self._path(key))

    def delete_prefix(self, prefix: str) -> int:
        """Erase every file under the folder `prefix` names (forget-me); returns how many files went."""
        import shutil

        if not prefix.endswith("/"):
            raise ValueError(f"refusing to erase {prefix!r}: a prefix must name a folder")
        folder = Path(self._path(prefix.rstrip("/")))
        if folder == self.root or not folder.is_dir():
            return 0
        deleted = sum(1 for p in folder.rglob("*") if p.is_file())
        shutil.rmtree(folder)
        return deleted

    def erase_prefixes(self, prefixes: Iterable[str]) -> dict[str, int]:
        """Every file under each prefix; counted as `objects.files`."""
        return _erase_prefixes(self, "objects.files", prefixes)
