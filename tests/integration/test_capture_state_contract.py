"""The capture-state port's contract, run against DynamoDB (moto) and the local store (object store + memory).

The capture flow itself (presign, S3 events, the sweeper) is tested in test_capture_flow.py; this suite
pins what the service relies on from either adapter: sessions by id with their owner, window buffers that
count each frame once, a close that exactly one caller wins, and late uploads recorded once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.capture import make_moto_dynamodb_atomic
from tests.support.harness import make_settings
from worldmm.capture.dynamo import CaptureStore, capture_table_definitions
from worldmm.capture.local import LocalCaptureStore
from worldmm.capture.models import CaptureSession, UploadKind
from worldmm.capture.port import CaptureStatePort
from worldmm.media.objects import DirectoryObjectStore

pytestmark = pytest.mark.integration

T0 = 1_800_000_000.0
FRAME, AUDIO = UploadKind.FRAME, UploadKind.AUDIO


def _session(session_id: str = "s1", user_id: str = "alice") -> CaptureSession:
    return CaptureSession(session_id=session_id, user_id=user_id, created_at="2027-01-15T09:30:00+00:00")


@pytest.fixture(params=["dynamodb", "local"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CaptureStatePort]:
    if request.param == "local":
        yield LocalCaptureStore(DirectoryObjectStore(tmp_path / "objects"))
        return
    request.getfixturevalue("aws")
    make_moto_dynamodb_atomic(request.getfixturevalue("monkeypatch"))  # one DynamoDB request is atomic
    import boto3

    settings = make_settings()
    client = boto3.client("dynamodb", region_name="us-east-1")
    for definition in capture_table_definitions(settings.sessions_table, settings.capture_windows_table):
        client.create_table(**definition)
    yield CaptureStore(settings.sessions_table, settings.capture_windows_table, open_shards=4, client=client)


# --- sessions -------------------------------------------------------------------------------------------


def test_capture_state_a_created_session_is_found_with_its_owner(state: CaptureStatePort) -> None:
    state.create_session(_session("s1", "alice"))
    state.create_session(_session("s2", "bob"))
    assert state.get_session("s1") == _session("s1", "alice")
    found = state.get_session("s2")
    assert found is not None and found.user_id == "bob"
    assert state.get_session("s-unknown") is None


def test_capture_state_a_session_is_never_overwritten(state: CaptureStatePort) -> None:
    state.create_session(_session("s1", "alice"))
    with pytest.raises(Exception):  # noqa: B017 - each adapter raises its store's own conflict error
        state.create_session(_session("s1", "mallory"))
    found = state.get_session("s1")
    assert found is not None and found.user_id == "alice"


def test_capture_state_the_first_session_end_wins(state: CaptureStatePort) -> None:
    state.create_session(_session())
    assert state.mark_session_ended("s1", "2027-01-15T10:00:00+00:00") == "2027-01-15T10:00:00+00:00"
    assert state.mark_session_ended("s1", "2027-01-15T11:00:00+00:00") == "2027-01-15T10:00:00+00:00"
    found = state.get_session("s1")
    assert found is not None and found.ended_at == "2027-01-15T10:00:00+00:00"


# --- open windows ---------------------------------------------------------------------------------------


def test_capture_state_open_uploads_count_each_frame_once(state: CaptureStatePort) -> None:
    # GIVEN frames 0, 1 and a redelivered 1, then the audio chunk
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    state.record_open_upload("alice", "s1", 0, FRAME, 1, T0 + 1)
    again = state.record_open_upload("alice", "s1", 0, FRAME, 1, T0 + 2)
    assert again is not None and again.frame_count == 2 and not again.has_audio
    window = state.record_open_upload("alice", "s1", 0, AUDIO, None, T0 + 3)
    # THEN the window holds two frames and the audio, owned by the uploader, opened at the first upload
    assert window is not None
    assert (window.frames, window.has_audio, window.user_id) == (frozenset({0, 1}), True, "alice")
    assert window.opened_at == pytest.approx(T0)
    assert window.closed_at is None
    assert state.get_window("s1", 0) == window


def test_capture_state_windows_belong_to_their_session(state: CaptureStatePort) -> None:
    state.record_open_upload("alice", "s1", 2, FRAME, 0, T0)
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    state.record_open_upload("bob", "s2", 1, FRAME, 5, T0)
    assert state.open_window_indices("s1") == [0, 2]
    assert state.open_window_indices("s2") == [1]
    assert state.open_window_indices("s-unknown") == []
    other = state.get_window("s2", 1)
    assert other is not None and other.user_id == "bob" and other.frames == frozenset({5})
    assert state.get_window("s1", 1) is None


def test_capture_state_a_window_keeps_its_first_uploader(state: CaptureStatePort) -> None:
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    window = state.record_open_upload("mallory", "s1", 0, FRAME, 1, T0 + 1)
    assert window is not None and window.user_id == "alice"


# --- close ----------------------------------------------------------------------------------------------


def test_capture_state_a_window_closes_exactly_once(state: CaptureStatePort) -> None:
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    closed = state.close_window("s1", 0, "complete", T0 + 10)
    assert closed is not None
    assert (closed.closed_at, closed.close_reason, closed.frames) == (pytest.approx(T0 + 10), "complete", {0})
    assert state.close_window("s1", 0, "timeout", T0 + 20) is None
    stored = state.get_window("s1", 0)
    assert stored is not None and stored.close_reason == "complete"
    assert state.open_window_indices("s1") == []


def test_capture_state_a_window_never_opened_is_not_closed(state: CaptureStatePort) -> None:
    assert state.close_window("s1", 7, "session_end", T0) is None
    assert state.get_window("s1", 7) is None


def test_capture_state_racing_closes_have_one_winner(state: CaptureStatePort) -> None:
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    barrier = threading.Barrier(6)
    winners: list[object] = []

    def close(i: int) -> None:
        barrier.wait()
        if state.close_window("s1", 0, f"racer-{i}", T0 + i) is not None:
            winners.append(i)

    threads = [threading.Thread(target=close, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1
    stored = state.get_window("s1", 0)
    assert stored is not None and stored.close_reason == f"racer-{winners[0]}"


def test_capture_state_an_upload_to_a_closed_window_is_not_buffered(state: CaptureStatePort) -> None:
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    state.close_window("s1", 0, "complete", T0 + 1)
    assert state.record_open_upload("alice", "s1", 0, FRAME, 1, T0 + 2) is None
    stored = state.get_window("s1", 0)
    assert stored is not None and stored.frames == frozenset({0})


def test_capture_state_a_reopened_window_closes_again(state: CaptureStatePort) -> None:
    # GIVEN a window whose close is undone (its ingest invoke failed)
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    closed = state.close_window("s1", 0, "complete", T0 + 1)
    assert closed is not None
    state.reopen_window(closed)
    # THEN it is open again, buffers, and the next close wins
    assert state.open_window_indices("s1") == [0]
    assert state.record_open_upload("alice", "s1", 0, FRAME, 1, T0 + 2) is not None
    again = state.close_window("s1", 0, "timeout", T0 + 3)
    assert again is not None and again.frames == frozenset({0, 1})


def test_capture_state_reopening_a_stale_close_changes_nothing(state: CaptureStatePort) -> None:
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    first = state.close_window("s1", 0, "complete", T0 + 1)
    assert first is not None
    state.reopen_window(first)
    second = state.close_window("s1", 0, "timeout", T0 + 5)
    assert second is not None
    state.reopen_window(first)  # the first close's undo, delivered late
    stored = state.get_window("s1", 0)
    assert stored is not None and stored.close_reason == "timeout"
    assert state.open_window_indices("s1") == []


# --- late uploads and the sweeper -----------------------------------------------------------------------


def test_capture_state_a_late_upload_is_recorded_once(state: CaptureStatePort) -> None:
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    state.close_window("s1", 0, "timeout", T0 + 30)
    assert state.record_late_upload("s1", 0, FRAME, 3, T0 + 40) is True
    assert state.record_late_upload("s1", 0, FRAME, 3, T0 + 41) is False  # the redelivered event
    assert state.record_late_upload("s1", 0, FRAME, 0, T0 + 42) is False  # buffered before the close
    assert state.record_late_upload("s1", 0, AUDIO, None, T0 + 43) is True
    assert state.record_late_upload("s1", 0, AUDIO, None, T0 + 44) is False
    stored = state.get_window("s1", 0)
    assert stored is not None
    assert (stored.frames, stored.has_audio, stored.close_reason) == (frozenset({0, 3}), True, "timeout")


def test_capture_state_overdue_windows_are_the_open_ones_opened_by_the_cutoff(state: CaptureStatePort) -> None:
    state.record_open_upload("alice", "s1", 0, FRAME, 0, T0)
    state.record_open_upload("alice", "s1", 1, FRAME, 0, T0 + 100)
    state.record_open_upload("bob", "s2", 0, FRAME, 0, T0 + 10)
    state.record_open_upload("alice", "s1", 2, FRAME, 0, T0 + 5)
    state.close_window("s1", 2, "complete", T0 + 6)
    state.record_open_upload("alice", "s1", 0, FRAME, 1, T0 + 200)  # a later upload does not move openedAt
    assert sorted(state.overdue_windows(T0 + 10)) == [("s1", 0), ("s2", 0)]
    assert sorted(state.overdue_windows(T0 - 1)) == []


# --- per-user quotas ----------------------------------------------------------------------


def test_capture_state_sessions_a_day_stop_at_the_limit(state: CaptureStatePort) -> None:
    assert [state.reserve_session("alice", "2027-01-15", 3) for _ in range(5)] == [True, True, True, False, False]
    assert state.reserve_session("alice", "2027-01-16", 3)  # a new day
    assert state.reserve_session("bob", "2027-01-15", 3)  # another user's count is theirs


def test_capture_state_a_window_counts_once_and_windows_stop_at_the_limit(state: CaptureStatePort) -> None:
    state.create_session(_session("s1"))
    state.create_session(_session("s2"))
    assert state.reserve_window("alice", "s1", 0, "2027-01-15", 2)
    assert state.reserve_window("alice", "s1", 0, "2027-01-15", 2)  # asked again: not counted again
    assert state.reserve_window("alice", "s2", 0, "2027-01-15", 2)  # another session's window 0 counts
    assert not state.reserve_window("alice", "s1", 1, "2027-01-15", 2)  # the day's third window
    assert state.reserve_window("alice", "s1", 0, "2027-01-15", 2)  # a counted window is still served
    assert state.reserve_window("alice", "s1", 1, "2027-01-16", 2)  # the next day
    assert not state.reserve_session("alice", "2027-01-15", 0)


def test_capture_state_bytes_of_a_day_add_up_and_stop_at_the_limit(state: CaptureStatePort) -> None:
    assert state.reserve_bytes("alice", "2027-01-15", 600, 1000)
    assert state.reserve_bytes("alice", "2027-01-15", 400, 1000)  # exactly the limit
    assert not state.reserve_bytes("alice", "2027-01-15", 1, 1000)  # one byte past it: nothing counted
    assert state.reserve_bytes("bob", "2027-01-15", 1000, 1000)  # another user's bytes are theirs
    assert state.reserve_bytes("alice", "2027-01-16", 1000, 1000)  # the next day
    assert not state.reserve_bytes("carol", "2027-01-15", 1001, 1000)  # more than a day's budget at once
    assert state.reserve_bytes("carol", "2027-01-15", 1000, 1000)


def test_capture_state_reruns_of_a_window_stop_at_the_limit(state: CaptureStatePort) -> None:
    state.create_session(_session("s1"))
    assert [state.count_rerun("s1", 4, 2) for _ in range(4)] == [True, True, False, False]
    assert state.count_rerun("s1", 5, 2)
