"""The graph snapshot format: arrays mapped onto the blob without copying, other formats refused."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from worldmm.graph.build import _FIELDS, FORMAT_VERSION, UserGraph, graph_from_edges

pytestmark = pytest.mark.unit


def _key(i: int) -> bytes:
    return (i + 1).to_bytes(16, "big")


def _graph(m: int = 400, n: int = 60) -> UserGraph:
    rng = np.random.default_rng(5)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    return graph_from_edges(
        [_key(int(i)) for i in src],
        [_key(int(i)) for i in dst],
        [(10_000 + j).to_bytes(16, "big") for j in range(m)],
        [_key(j % 7) for j in range(m)],
    )


def test_snapshot_round_trips_every_array_with_its_dtype() -> None:
    graph = _graph()
    restored = UserGraph.from_bytes(graph.to_bytes())
    for name in _FIELDS:
        original, loaded = getattr(graph, name), getattr(restored, name)
        assert loaded.dtype == original.dtype, name
        assert np.array_equal(loaded, original, equal_nan=original.dtype.kind == "f"), name


def test_snapshot_arrays_are_views_on_the_blob_not_copies() -> None:
    # GIVEN a snapshot held in a bytes object (as Redis returns it)
    blob = _graph().to_bytes()
    view = memoryview(blob)[0:]
    # WHEN it is loaded from a memoryview of it
    restored = UserGraph.from_bytes(view)
    # THEN the big arrays share the blob's memory, 64-byte aligned, and are read-only
    blob_array = np.frombuffer(blob, dtype=np.uint8)
    for name in ("indices", "norm_data", "edge_triple", "segment_nodes"):
        array = getattr(restored, name)
        assert np.shares_memory(array, blob_array), name
        assert array.ctypes.data % 64 == (blob_array.ctypes.data % 64), name
        assert not array.flags.writeable


def test_empty_graph_snapshot_round_trips() -> None:
    empty = graph_from_edges([], [], [], [])
    restored = UserGraph.from_bytes(empty.to_bytes())
    assert restored.node_count == 0 and restored.edge_count == 0
    assert restored.indptr.tolist() == [0]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda b: b[:10],  # truncated header
        lambda b: b[: len(b) // 2],  # truncated arrays
        lambda b: b"NOPE" + b[4:],  # another magic
        lambda b: b[:4] + struct.pack("<I", FORMAT_VERSION - 1) + b[8:],  # an older version
        lambda b: b"PK\x03\x04" + b[4:],  # the previous .npz format
    ],
)
def test_snapshot_of_another_format_or_truncated_is_refused(mangle) -> None:
    blob = _graph().to_bytes()
    with pytest.raises(ValueError):
        UserGraph.from_bytes(mangle(blob))


def test_snapshot_keeps_connected_components() -> None:
    # GIVEN two disconnected edges
    graph = graph_from_edges([_key(1), _key(3)], [_key(2), _key(4)], [_key(10), _key(11)], [_key(20)] * 2)
    restored = UserGraph.from_bytes(graph.to_bytes())
    # THEN the nodes of each edge share a label and the two edges differ
    a, b = restored.component[restored.node_indices([_key(1), _key(2)])]
    c, d = restored.component[restored.node_indices([_key(3), _key(4)])]
    assert a == b and c == d and a != c


@pytest.mark.parametrize("seed", range(5))
def test_connected_components_match_a_breadth_first_search(seed: int) -> None:
    from collections import deque

    from worldmm.graph.build import connected_components

    # GIVEN a sparse random graph with chains, self-loops and many small components
    rng = np.random.default_rng(seed)
    n, m = 400, 260
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    chain = np.arange(300, 340)
    src, dst = np.concatenate([src, chain[:-1]]), np.concatenate([dst, chain[1:]])  # a long path
    # WHEN labelled
    labels = connected_components(n, src, dst)
    # THEN two nodes share a label exactly when a breadth-first search joins them
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        neighbours[a].append(b)
        neighbours[b].append(a)
    expected = [-1] * n
    count = 0
    for start in range(n):
        if expected[start] >= 0:
            continue
        expected[start] = count
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for other in neighbours[node]:
                if expected[other] < 0:
                    expected[other] = count
                    queue.append(other)
        count += 1
    assert labels.dtype == np.int32
    assert labels.tolist() == expected  # numbered by each component's smallest node, like the search


def test_segment_end_times_bound_what_is_visible_and_survive_the_snapshot() -> None:
    # GIVEN three segments that ended at 100, 200 and 300 s (two triples in the second)
    a, b, c = _key(1), _key(2), _key(3)
    seg = [_key(10), _key(11), _key(11), _key(12)]
    graph = graph_from_edges(
        [a, b, b, c], [b, c, a, a], [_key(20 + i) for i in range(4)], seg, [100.0, 200.0, 200.0, 300.0]
    )
    restored = UserGraph.from_bytes(graph.to_bytes())
    by_key = {bytes(k).ljust(16, b"\x00"): i for i, k in enumerate(restored.segment_keys)}
    # WHEN bounded "as of" 250 s, and to (150, 300]
    as_of = restored.segments_visible(250.0)
    window = restored.segments_visible(300.0, since_s=150.0)
    # THEN only the segments that ended inside the bound are visible
    assert [bool(as_of[by_key[k]]) for k in (_key(10), _key(11), _key(12))] == [True, True, False]
    assert [bool(window[by_key[k]]) for k in (_key(10), _key(11), _key(12))] == [False, True, True]
    # and a graph built without times shows nothing (an unknown end is never "before" the question)
    assert not _graph().segments_visible(1e12).any()
