"""PPR on the compact graph: the same scores and rankings as igraph's prpack (spec 001 "PPR Parameters")."""

from __future__ import annotations

import numpy as np
import pytest

from worldmm.graph.build import UserGraph, graph_from_edges, literal_key
from worldmm.graph.ppr import TOP_K_TOLERANCE, personalized_pagerank, top_k, uniform_reset

pytestmark = pytest.mark.unit


def _key(i: int) -> bytes:
    return (i + 1).to_bytes(16, "big")


def _random_graph(seed: int, n: int, m: int, self_loops: bool = True):
    rng = np.random.default_rng(seed)
    # A skewed degree distribution, like a memory graph around "I" and a few places.
    weights = 1.0 / np.arange(1, n + 1) ** 0.7
    weights /= weights.sum()
    src = rng.choice(n, m, p=weights)
    dst = rng.choice(n, m, p=weights)
    if not self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    graph = graph_from_edges(
        [_key(int(i)) for i in src],
        [_key(int(i)) for i in dst],
        [(10_000_000 + j).to_bytes(16, "big") for j in range(src.size)],
        [_key(j % 17) for j in range(src.size)],
    )
    return rng, src, dst, graph


def _igraph_ppr(n: int, src, dst, seeds: list[int]) -> np.ndarray:
    import igraph as ig

    g = ig.Graph(n=n, edges=list(zip(src.tolist(), dst.tolist(), strict=True)), directed=False)
    reset = np.zeros(n)
    reset[seeds] = 1.0
    return np.array(
        g.personalized_pagerank(reset=reset.tolist(), damping=0.85, implementation="prpack", directed=False)
    )


def _by_original_index(graph: UserGraph, n: int, scores: np.ndarray) -> np.ndarray:
    """Node scores indexed by the original node id i of each key _key(i)."""
    out = np.zeros(n)
    for key, node in zip(graph.node_keys, graph.key_nodes, strict=True):
        out[int.from_bytes(bytes(key).ljust(16, b"\x00"), "big") - 1] = scores[node]
    return out


def _ours_by_original_index(graph: UserGraph, n: int, seeds: list[int]) -> np.ndarray:
    seed_nodes = graph.node_indices([_key(s) for s in seeds])
    scores = personalized_pagerank(graph, uniform_reset(graph, seed_nodes), damping=0.85, tolerance=1e-10)
    return _by_original_index(graph, n, scores)


@pytest.mark.parametrize("seed", range(6))
def test_ppr_matches_igraph_prpack_on_random_graphs(seed: int) -> None:
    # GIVEN a random undirected multigraph with self-loops and a few seed nodes
    n = 300
    rng, src, dst, graph = _random_graph(seed, n, 1200)
    present = np.unique(np.concatenate([src, dst]))
    seeds = sorted(rng.choice(present, 3, replace=False).tolist())
    # WHEN PPR runs on the compact graph and igraph's prpack runs on the same edges
    ours = _ours_by_original_index(graph, n, seeds)
    reference = _igraph_ppr(n, src, dst, seeds)
    # THEN the scores agree and so does the top-20 ranking
    assert np.abs(ours - reference).max() < 1e-8
    assert ours.sum() == pytest.approx(1.0)
    assert list(np.argsort(-ours, kind="stable")[:20]) == list(np.argsort(-reference, kind="stable")[:20])


def test_ppr_top_k_matches_igraph_on_a_larger_sparse_graph() -> None:
    # GIVEN a sparse graph with several components (dangling structure away from the seeds)
    n = 5000
    _, src, dst, graph = _random_graph(42, n, 6000, self_loops=False)
    seeds = [0, 7]
    # WHEN both rank the nodes
    ours = _ours_by_original_index(graph, n, seeds)
    reference = _igraph_ppr(n, src, dst, seeds)
    # THEN the top-50 sets are the same
    assert set(np.argsort(-ours)[:50]) == set(np.argsort(-reference)[:50])


def test_ppr_gives_nothing_to_a_component_without_seeds() -> None:
    # GIVEN two disconnected triangles, seeded in the first
    keys = [_key(i) for i in range(6)]
    graph = graph_from_edges(
        [keys[0], keys[1], keys[2], keys[3], keys[4], keys[5]],
        [keys[1], keys[2], keys[0], keys[4], keys[5], keys[3]],
        [_key(100 + i) for i in range(6)],
        [_key(200)] * 6,
    )
    seeds = graph.node_indices([keys[0]])
    # WHEN
    scores = personalized_pagerank(graph, uniform_reset(graph, seeds))
    # THEN the other triangle gets no mass and the seed ranks first
    other = graph.node_indices(keys[3:])
    assert scores[other].sum() == 0.0
    assert top_k(scores, 1).tolist() == seeds.tolist()


def test_ppr_without_seeds_is_all_zero() -> None:
    _, _, _, graph = _random_graph(1, 50, 100)
    scores = personalized_pagerank(graph, uniform_reset(graph, np.zeros(0, dtype=np.int64)))
    assert not scores.any()
    assert top_k(scores, 5).size == 0


def test_graph_literal_objects_are_leaf_nodes_and_edges_keep_triple_ids() -> None:
    # GIVEN "I met Alice" and "meeting started_at 2:30 PM" (a literal object)
    me, alice, meeting = _key(1), _key(2), _key(3)
    at = literal_key("2:30 PM")
    graph = graph_from_edges([me, meeting], [alice, at], [_key(50), _key(51)], [_key(9), _key(9)])
    # THEN the literal is a node of degree one, and each edge names its triple
    [leaf] = graph.node_indices([at]).tolist()
    assert graph.degree[leaf] == 1.0
    assert graph.node_count == 4
    assert sorted(bytes(t).ljust(16, b"\x00") for t in graph.edge_triple) == sorted([_key(50), _key(51)])
    assert literal_key("2:30 pm") == at  # literals are matched case-insensitively


def test_graph_segment_scores_count_each_node_once_per_segment() -> None:
    # GIVEN segment A with triples (x-y, x-z) and segment B with (y-z)
    x, y, z = _key(1), _key(2), _key(3)
    seg_a, seg_b = _key(10), _key(11)
    graph = graph_from_edges([x, x, y], [y, z, z], [_key(20), _key(21), _key(22)], [seg_a, seg_a, seg_b])
    node_scores = np.zeros(graph.node_count)
    node_scores[graph.node_indices([x])] = 0.5
    node_scores[graph.node_indices([y])] = 0.3
    node_scores[graph.node_indices([z])] = 0.2
    # WHEN
    scores = graph.segment_scores(node_scores)
    # THEN A = x + y + z (x once), B = y + z
    by_segment = {bytes(k).ljust(16, b"\x00"): s for k, s in zip(graph.segment_keys, scores, strict=True)}
    assert by_segment[seg_a] == pytest.approx(1.0)
    assert by_segment[seg_b] == pytest.approx(0.5)


def test_graph_edge_scores_are_subject_plus_object() -> None:
    x, y, z = _key(1), _key(2), _key(3)
    graph = graph_from_edges([x, y], [y, z], [_key(20), _key(21)], [_key(9), _key(9)])
    node_scores = np.zeros(graph.node_count)
    node_scores[graph.node_indices([x, y, z])] = [0.5, 0.3, 0.2]
    assert sorted(graph.edge_scores(node_scores).tolist()) == pytest.approx([0.5, 0.8])


def test_graph_without_its_edge_list_ranks_like_the_full_graph_and_refuses_edge_scores() -> None:
    # GIVEN one random graph (self-loops included) built with and without its edge list
    _, src, dst, full = _random_graph(5, 60, 300)
    keys = ([_key(int(i)) for i in src], [_key(int(i)) for i in dst])
    triples = [(10_000_000 + j).to_bytes(16, "big") for j in range(src.size)]
    segments = [_key(j % 17) for j in range(src.size)]
    lean = UserGraph.from_bytes(graph_from_edges(*keys, triples, segments, keep_edges=False).to_bytes())
    # THEN it still counts every triple, ranks segments identically, and is smaller
    assert lean.edge_count == full.edge_count == src.size
    seeds = full.node_indices([_key(0)])
    scores = personalized_pagerank(full, uniform_reset(full, seeds))
    assert np.array_equal(personalized_pagerank(lean, uniform_reset(lean, seeds)), scores)
    assert np.array_equal(lean.segment_scores(scores), full.segment_scores(scores))
    assert len(lean.to_bytes()) < len(full.to_bytes()) - 24 * src.size
    # but has no triples to score
    with pytest.raises(ValueError, match="edge list"):
        lean.edge_scores(scores)


def test_graph_numbers_nodes_by_falling_degree_and_still_finds_every_key() -> None:
    # GIVEN a skewed random graph (the hubs' vector entries are kept together for the sparse products)
    _, src, dst, graph = _random_graph(2, 120, 500)
    # THEN node 0 is the highest-degree node, degrees never rise with the index, and keys map to their nodes
    assert np.all(np.diff(graph.degree) <= 0)
    for i in np.unique(np.concatenate([src, dst])).tolist():
        [node] = graph.node_indices([_key(i)]).tolist()
        assert graph.degree[node] == np.count_nonzero(src == i) + np.count_nonzero(dst == i)


def test_graph_serialisation_round_trips() -> None:
    _, _, _, graph = _random_graph(3, 100, 400)
    restored = UserGraph.from_bytes(graph.to_bytes())
    for name in ("node_keys", "degree", "indptr", "indices", "norm_data", "edge_triple", "segment_keys"):
        assert np.array_equal(getattr(restored, name), getattr(graph, name))
    seeds = graph.node_indices([_key(0)])
    assert np.allclose(
        personalized_pagerank(restored, uniform_reset(restored, seeds)),
        personalized_pagerank(graph, uniform_reset(graph, seeds)),
    )


def test_ppr_rejects_a_reset_vector_of_the_wrong_size() -> None:
    _, _, _, graph = _random_graph(4, 20, 40)
    with pytest.raises(ValueError):
        personalized_pagerank(graph, np.ones(graph.node_count + 1))


@pytest.mark.parametrize("seed", range(4))
def test_ranking_tolerance_gives_the_exact_top_50_on_a_hub_graph(seed: int) -> None:
    # GIVEN a 20k-edge memory-like graph: a hub ("I") in 30 % of the triples, skewed degrees, leaves
    rng = np.random.default_rng(100 + seed)
    n, m = 3000, 20_000
    weights = 1.0 / np.arange(1, n + 1) ** 0.8
    weights /= weights.sum()
    src, dst = rng.choice(n, m, p=weights), rng.choice(n, m, p=weights)
    src[rng.random(m) < 0.3] = 0
    graph = graph_from_edges(
        [_key(int(i)) for i in src],
        [_key(int(i)) for i in dst],
        [(10_000_000 + j).to_bytes(16, "big") for j in range(m)],
        [_key(j % 97) for j in range(m)],
    )
    present = np.unique(np.concatenate([src, dst]))
    seeds = sorted(rng.choice(present[present != 0], 3, replace=False).tolist())
    reset = uniform_reset(graph, graph.node_indices([_key(s) for s in seeds]))
    # WHEN PPR runs at the ranking tolerance (float32, ~8 products) and prpack runs on the same edges
    fast = personalized_pagerank(graph, reset, tolerance=TOP_K_TOLERANCE)
    reference = _igraph_ppr(n, src, dst, seeds)
    by_original = _by_original_index(graph, n, fast)
    # THEN the top-50 is prpack's, in prpack's order
    assert list(top_k(by_original, 50)) == list(np.argsort(-reference, kind="stable")[:50])
    assert by_original.sum() == pytest.approx(1.0)


def test_ppr_with_seeds_in_two_components_splits_the_mass_by_component() -> None:
    # GIVEN two disconnected triangles and a third one, seeded in the first two
    keys = [_key(i) for i in range(9)]
    subjects = [keys[0], keys[1], keys[2], keys[3], keys[4], keys[5], keys[6], keys[7], keys[8]]
    objects = [keys[1], keys[2], keys[0], keys[4], keys[5], keys[3], keys[7], keys[8], keys[6]]
    graph = graph_from_edges(subjects, objects, [_key(100 + i) for i in range(9)], [_key(200)] * 9)
    seeds = graph.node_indices([keys[0], keys[3]])
    # WHEN (both tolerances)
    for tolerance in (1e-10, TOP_K_TOLERANCE):
        scores = personalized_pagerank(graph, uniform_reset(graph, seeds), tolerance=tolerance)
        # THEN each seeded triangle holds half the mass, the unseeded one exactly none
        assert scores[graph.node_indices(keys[:3])].sum() == pytest.approx(0.5, abs=1e-6)
        assert scores[graph.node_indices(keys[3:6])].sum() == pytest.approx(0.5, abs=1e-6)
        assert scores[graph.node_indices(keys[6:])].sum() == 0.0


def test_segment_scores_equal_the_sum_over_each_segments_distinct_nodes_on_a_random_graph() -> None:
    # GIVEN a random graph whose 17 segments share nodes
    _, src, dst, graph = _random_graph(8, 200, 900)
    rng = np.random.default_rng(3)
    node_scores = rng.random(graph.node_count)
    # WHEN scored per segment
    scores = graph.segment_scores(node_scores)
    # THEN each is the sum over the segment's distinct nodes, and the counts are per-node segment frequencies
    by_segment: dict[int, set[int]] = {}
    for j, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):  # edge j is in segment j % 17
        [position] = np.flatnonzero(graph.segment_keys == _key(j % 17).rstrip(b"\x00")).tolist()
        by_segment.setdefault(position, set()).update(graph.node_indices([_key(s), _key(d)]).tolist())
    for seg, nodes in by_segment.items():
        assert scores[seg] == pytest.approx(node_scores[sorted(nodes)].sum(), rel=1e-12)
    frequency = graph.segment_frequency()
    for node in range(graph.node_count):
        assert frequency[node] == sum(node in nodes for nodes in by_segment.values())


def test_segment_scores_of_several_columns_equal_each_column_scored_alone() -> None:
    # GIVEN a random graph and two node score vectors (retrieval scores the seeds and the spread together)
    *_, graph = _random_graph(8, 200, 900)
    rng = np.random.default_rng(5)
    first, second = rng.random(graph.node_count), rng.random(graph.node_count)
    # WHEN both are scored in one pass
    both = graph.segment_scores(np.column_stack((first, second)))
    # THEN each column is that vector's own segment scores
    assert both.shape == (graph.segment_keys.shape[0], 2)
    np.testing.assert_allclose(both[:, 0], graph.segment_scores(first), rtol=1e-12)
    np.testing.assert_allclose(both[:, 1], graph.segment_scores(second), rtol=1e-12)
