"""The object store port's contract, run against S3 (moto) and a directory on disk."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from worldmm.media.objects import DirectoryObjectStore, ObjectNotFound, ObjectStore, S3ObjectStore

pytestmark = pytest.mark.integration

BUCKET = "worldmm-frames-test"


@pytest.fixture(params=["s3", "directory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "directory":
        yield DirectoryObjectStore(tmp_path / "objects")
        return
    request.getfixturevalue("aws")
    import boto3

    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    # Small pages, so every listing test also crosses S3 page boundaries.
    yield S3ObjectStore(BUCKET, client=client, page_size=2)


def test_object_store_put_then_get_returns_the_same_bytes(store: ObjectStore) -> None:
    data = bytes(range(256)) * 10
    store.put("sessions/s1/window_0/frame_0001.jpg", data)
    assert store.get("sessions/s1/window_0/frame_0001.jpg") == data


def test_object_store_get_missing_key_raises_object_not_found(store: ObjectStore) -> None:
    with pytest.raises(ObjectNotFound):
        store.get("sessions/s1/window_0/nothing.jpg")


def test_object_store_put_overwrites(store: ObjectStore) -> None:
    store.put("sessions/s1/audio.wav", b"first")
    store.put("sessions/s1/audio.wav", b"second")
    assert store.get("sessions/s1/audio.wav") == b"second"


def test_object_store_exists_tells_present_from_absent(store: ObjectStore) -> None:
    store.put("sessions/s1/window_0/frame_0001.jpg", b"x")
    assert store.exists("sessions/s1/window_0/frame_0001.jpg")
    assert not store.exists("sessions/s1/window_0/frame_0002.jpg")


def test_object_store_list_returns_keys_under_a_string_prefix_in_order(store: ObjectStore) -> None:
    # GIVEN frames of windows 1 and 10 (which share the string prefix "window_1") and another session
    for key in [
        "sessions/s1/window_10/frame_0002.jpg",
        "sessions/s1/window_1/frame_0002.jpg",
        "sessions/s1/window_1/frame_0001.jpg",
        "sessions/s1/window_2/frame_0001.jpg",
        "sessions/s2/window_1/frame_0001.jpg",
    ]:
        store.put(key, b"jpg")
    # WHEN listing with S3 prefix semantics
    # THEN keys come back sorted, under the prefix only, whether it ends at a folder or not
    assert store.list("sessions/s1/window_1/") == [
        "sessions/s1/window_1/frame_0001.jpg",
        "sessions/s1/window_1/frame_0002.jpg",
    ]
    assert store.list("sessions/s1/window_1") == [
        "sessions/s1/window_1/frame_0001.jpg",
        "sessions/s1/window_1/frame_0002.jpg",
        "sessions/s1/window_10/frame_0002.jpg",
    ]
    assert len(store.list("sessions/")) == 5


def test_object_store_list_of_an_unknown_prefix_is_empty(store: ObjectStore) -> None:
    store.put("sessions/s1/window_0/frame_0001.jpg", b"x")
    assert store.list("sessions/nope/") == []
    assert store.list("other") == []


def test_object_store_list_returns_every_page(store: ObjectStore) -> None:
    # GIVEN more keys than one list page (the S3 store lists two keys a page here)
    for i in range(7):
        store.put(f"sessions/big/window_{i}/frame_0001.jpg", b"")
    # WHEN listed THEN every key is returned, in order
    keys = store.list("sessions/big/")
    assert keys == [f"sessions/big/window_{i}/frame_0001.jpg" for i in range(7)]


def test_directory_store_concurrent_puts_of_one_key_leave_one_whole_value(tmp_path: Path) -> None:
    # GIVEN eight writers racing on one key (a retried window re-uploading); S3 makes each put atomic,
    # the directory store must too (moto is not thread-safe, so this runs on the directory only)
    store = DirectoryObjectStore(tmp_path / "objects")
    values = [bytes([i]) * 65536 for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda v: store.put("sessions/s1/audio.wav", v), values))
    # THEN the key holds one writer's value, whole, and no temporary file is left or listed
    assert store.get("sessions/s1/audio.wav") in values
    assert store.list("sessions/") == ["sessions/s1/audio.wav"]
    assert [p.name for p in (tmp_path / "objects/sessions/s1").iterdir()] == ["audio.wav"]


def test_directory_store_rejects_keys_that_escape_its_root(tmp_path: Path) -> None:
    store = DirectoryObjectStore(tmp_path / "objects")
    for key in ("../outside.txt", "/etc/passwd", "", "sessions/../../x"):
        with pytest.raises(ValueError):
            store.put(key, b"x")


def test_directory_store_uses_the_s3_key_layout_on_disk(tmp_path: Path) -> None:
    store = DirectoryObjectStore(tmp_path / "objects")
    store.put("sessions/s1/window_3/frame_0001.jpg", b"jpg")
    assert (tmp_path / "objects/sessions/s1/window_3/frame_0001.jpg").read_bytes() == b"jpg"
