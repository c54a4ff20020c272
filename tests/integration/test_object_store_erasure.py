"""Forget-me's object erasure on both object store adapters (S3 with versioning on moto, a directory):
a session's folder goes entirely — every S3 version and delete marker — and nothing beside it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from worldmm.media.objects import DirectoryObjectStore, S3ObjectStore

pytestmark = pytest.mark.integration

BUCKET = "worldmm-erase-test"


@pytest.fixture(params=["s3", "directory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "directory":
        yield DirectoryObjectStore(tmp_path / "objects")
        return
    request.getfixturevalue("aws")
    import boto3

    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    client.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    yield S3ObjectStore(BUCKET, client=client, page_size=2)


def _remaining_versions(store: Any) -> list[str]:
    if isinstance(store, S3ObjectStore):
        pages = store.client.get_paginator("list_object_versions").paginate(Bucket=BUCKET)
        return sorted(v["Key"] for p in pages for v in [*p.get("Versions", []), *p.get("DeleteMarkers", [])])
    return store.list("")


def test_delete_prefix_erases_every_version_of_the_folder_and_nothing_beside(store: Any) -> None:
    # GIVEN two sessions whose ids share a prefix, one object written twice, one deleted (a marker on S3)
    for key in (
        "sessions/abc/window_0/frame_0000.jpg",
        "sessions/abc/window_0/audio.wav",
        "sessions/abcd/metadata.json",
    ):
        store.put(key, b"one")
    store.put("sessions/abc/window_0/frame_0000.jpg", b"two")
    if isinstance(store, S3ObjectStore):
        store.client.delete_object(Bucket=BUCKET, Key="sessions/abc/window_0/audio.wav")
    # WHEN session abc's folder is erased
    erased = store.delete_prefix("sessions/abc/")
    # THEN every version of it went, and session abcd is untouched
    assert erased == (4 if isinstance(store, S3ObjectStore) else 2)
    assert _remaining_versions(store) == ["sessions/abcd/metadata.json"]
    assert store.delete_prefix("sessions/abc/") == 0  # idempotent


@pytest.mark.parametrize("prefix", ["sessions/abc", "", "sessions"])
def test_delete_prefix_refuses_what_is_not_a_folder(store: Any, prefix: str) -> None:
    with pytest.raises(ValueError):
        store.delete_prefix(prefix)
