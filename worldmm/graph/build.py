"""A user's knowledge graph as compact arrays: built once from the database, cached, used by PPR.

Nodes are canonical entities and literal objects (leaf nodes, spec 001 "worldmm_triples"); every
triple is one undirected edge. The adjacency is kept pre-normalised (S = D^-1/2 A D^-1/2) so a query runs
PPR without touching anything but this object. Semantic graphs keep the edge list (subject, object and
triple id per edge: the semantic retriever ranks triples); episodic graphs rank segments through the
segment x node incidence and leave it out, which makes their snapshots (read from Redis on a cold start)
more than 60% smaller.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from worldmm.db.models import MemoryType
from worldmm.db.queries.graph import PACKED_EDGE_LAYOUT, packed_edges
from worldmm.graph.snapshot import pack, unpack

if TYPE_CHECKING:
    import numpy as np
    from scipy.sparse import csr_matrix

    from worldmm.db.engine import Database

FORMAT_VERSION = 6
_MAGIC = b"WMMG"  # the snapshot layout is worldmm.graph.snapshot's


@dataclass(frozen=True)
class GraphKey:
    """Which graph: one per user and memory type, and per scale (segment duration) for episodic."""

    user_id: str
    memory_type: MemoryType
    scale: int | None = None

    def __post_init__(self) -> None:
        if (self.memory_type == MemoryType.EPISODIC) != (self.scale is not None):
            raise ValueError("episodic graphs need a scale; semantic graphs have none")

    @property
    def redis_key(self) -> str:
        base = f"worldmm:graph:{self.user_id}:{self.memory_type.value}"
        return base if self.scale is None else f"{base}:{self.scale}"


@dataclass(frozen=True)
class UserGraph:
    """The compact graph: normalised CSR adjacency, node keys, edges labelled by triples and segments."""

    node_keys: np.ndarray  # S16, sorted: the 16-byte keys (entity uuid or literal hash) for look-up
    key_nodes: np.ndarray  # int32 node index of each key in node_keys
    degree: np.ndarray  # float64 weighted degree (self-loops count twice, as in igraph)
    indptr: np.ndarray
    indices: np.ndarray
    norm_data: np.ndarray  # float64 values of D^-1/2 A D^-1/2
    edge_src: np.ndarray  # int32 node index per triple; this and the next two are empty without the edge list
    edge_dst: np.ndarray
    edge_triple: np.ndarray  # S16 triple id per edge
    segment_keys: np.ndarray  # S16 distinct segment ids
    segment_indptr: np.ndarray  # CSR rows of the binary segment x node incidence (distinct nodes)
    segment_nodes: np.ndarray
    segment_end_s: np.ndarray  # float64 epoch seconds each segment ended (NaN: unknown, never visible)
    component: np.ndarray  # int32 connected-component label per node (PPR deflates per component)

    @property
    def node_count(self) -> int:
        return int(self.node_keys.shape[0])

    @property
    def edge_count(self) -> int:
        """Triples in the graph (each adds 1 to both ends' degree, a self-loop 2 to its one end)."""
        return round(float(self.degree.sum()) / 2)

    def normalized_adjacency(self, *, single: bool = False) -> csr_matrix:
        """S = D^-1/2 A D^-1/2 as a scipy CSR matrix sharing the arrays (`single`: a float32 copy)."""
        return self._adjacency32 if single else self._adjacency64

    @cached_property
    def _adjacency64(self) -> csr_matrix:
        from scipy.sparse import csr_matrix

        n = self.node_count
        return csr_matrix((self.norm_data, self.indices, self.indptr), shape=(n, n), copy=False)

    @cached_property
    def _adjacency32(self) -> csr_matrix:
        import numpy as np
        from scipy.sparse import csr_matrix

        n = self.node_count
        data = self.norm_data.astype(np.float32)
        return csr_matrix((data, self.indices, self.indptr), shape=(n, n), copy=False)

    def walk_vectors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(D^1/2 1, D^-1/2 1 with 0 on isolated nodes, |D^1/2 1| restricted to each component)."""
        return self._walk_vectors

    @cached_property
    def _walk_vectors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        import numpy as np

        sqrt_deg = np.sqrt(self.degree)
        inv_sqrt = np.zeros(self.node_count)
        connected = sqrt_deg > 0
        inv_sqrt[connected] = 1.0 / sqrt_deg[connected]
        component_norm = np.sqrt(np.bincount(self.component, weights=self.degree)) if self.node_count else sqrt_deg
        return sqrt_deg, inv_sqrt, component_norm

    def node_indices(self, keys: list[bytes]) -> np.ndarray:
        """Indices of the nodes with these 16-byte keys; keys not in the graph are dropped."""
        import numpy as np

        if not keys or self.node_count == 0:
            return np.zeros(0, dtype=np.int64)
        wanted = np.unique(np.array(keys, dtype="S16"))
        pos = np.searchsorted(self.node_keys, wanted)
        pos = np.clip(pos, 0, self.node_count - 1)
        return np.asarray(self.key_nodes[pos[self.node_keys[pos] == wanted]], dtype=np.int64)

    def segment_scores(self, node_scores: np.ndarray) -> np.ndarray:
        """Score per segment: the summed node score of the distinct nodes of the segment's triples.

        `node_scores` may hold several score vectors as columns (one pass over the incidence for all).
        """
        import numpy as np

        if self.segment_keys.shape[0] == 0:
            return np.zeros((0, *np.shape(node_scores)[1:]))
        # One CSR product over the segment x node incidence: the same additions in the same order as
        # np.add.reduceat(node_scores[segment_nodes], ...), without the gathered temporary.
        return np.asarray(self._segment_incidence @ np.asarray(node_scores, dtype=np.float64))

    @cached_property
    def _segment_incidence(self) -> csr_matrix:
        import numpy as np
        from scipy.sparse import csr_matrix

        shape = (self.segment_keys.shape[0], self.node_count)
        ones = np.ones(self.segment_nodes.shape[0])
        return csr_matrix((ones, self.segment_nodes, self.segment_indptr), shape=shape, copy=False)

    def segment_frequency(self) -> np.ndarray:
        """Per node, in how many segments it appears (cached: the graph is immutable)."""
        return self._segment_frequency

    @cached_property
    def _segment_frequency(self) -> np.ndarray:
        import numpy as np

        return np.bincount(self.segment_nodes, minlength=self.node_count)

    def segments_visible(self, until_s: float, since_s: float | None = None) -> np.ndarray:
        """Boolean mask of the segments that ended in (since, until] (an "as of" time bound)."""
        import numpy as np

        visible = self.segment_end_s <= until_s
        if since_s is not None:
            visible &= self.segment_end_s > since_s
        return np.asarray(visible)

    def edge_scores(self, node_scores: np.ndarray) -> np.ndarray:
        """Score per triple edge: score(subject) + score(object) (spec 001 semantic scoring)."""
        import numpy as np

        if self.edge_src.shape[0] != self.edge_count:
            raise ValueError("this graph was built without its edge list (keep_edges=False)")
        return np.asarray(node_scores[self.edge_src] + node_scores[self.edge_dst])

    # --- serialisation ---------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The snapshot (worldmm.graph.snapshot: a JSON header and the raw arrays, no compression)."""
        return pack(_MAGIC, FORMAT_VERSION, {name: getattr(self, name) for name in _FIELDS})

    @classmethod
    def from_bytes(cls, blob: bytes | memoryview) -> UserGraph:
        """Arrays mapped onto `blob` (read-only views, no copy); ValueError for another format."""
        return cls(**unpack(blob, _MAGIC, FORMAT_VERSION, _FIELDS))

    def _arrays(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}


_FIELDS = (
    "node_keys",
    "key_nodes",
    "degree",
    "indptr",
    "indices",
    "norm_data",
    "edge_src",
    "edge_dst",
    "edge_triple",
    "segment_keys",
    "segment_indptr",
    "segment_nodes",
    "segment_end_s",
    "component",
)


def literal_key(literal: str) -> bytes:
    """Python twin of worldmm.db.queries.graph.LITERAL_KEY_SQL for ASCII text (used by tests and synthetic data)."""
    return hashlib.sha256(("literal:" + literal.lower()).encode()).digest()[:16]


def graph_from_edges(
    subject_keys: Sequence[bytes] | np.ndarray,
    object_keys: Sequence[bytes] | np.ndarray,
    triple_keys: Sequence[bytes] | np.ndarray,
    segment_keys: Sequence[bytes] | np.ndarray,
    segment_end_s: Sequence[float] | np.ndarray | None = None,
    *,
    keep_edges: bool = True,
) -> UserGraph:
    """Build the compact graph from parallel edge lists (or S16 arrays) of 16-byte keys.

    `segment_end_s`: per edge, when its segment ended (epoch seconds); unknown (NaN) when not given.
    `keep_edges`: keep the edge list (`edge_src`, `edge_dst`, `edge_triple`) that `edge_scores` needs;
    without it the graph holds the adjacency and the segments only.
    """
    import numpy as np

    m = len(triple_keys)
    if m == 0:
        return _empty_graph()
    node_keys, key_nodes, src, dst = _numbered_nodes(subject_keys, object_keys, m)
    seg_keys, seg_first, seg_index = np.unique(
        np.array(segment_keys, dtype="S16"), return_inverse=True, return_index=True
    )
    ends = np.full(m, np.nan) if segment_end_s is None else np.asarray(segment_end_s, dtype=np.float64)
    n = node_keys.shape[0]
    adjacency, degree, norm_data = _normalised_adjacency(n, src, dst)
    segment_indptr, segment_nodes = _segment_node_incidence(n, seg_keys.shape[0], seg_index, src, dst)
    return UserGraph(
        node_keys=node_keys,
        key_nodes=key_nodes,
        degree=degree,
        indptr=adjacency.indptr.astype(np.int64 if adjacency.nnz > 2**31 - 1 else np.int32),
        indices=adjacency.indices.astype(np.int32),
        norm_data=norm_data,
        edge_src=src if keep_edges else np.zeros(0, dtype=np.int32),
        edge_dst=dst if keep_edges else np.zeros(0, dtype=np.int32),
        edge_triple=np.array(triple_keys if keep_edges else [], dtype="S16"),
        segment_keys=seg_keys,
        segment_indptr=segment_indptr,
        segment_nodes=segment_nodes,
        segment_end_s=np.ascontiguousarray(ends[seg_first], dtype=np.float64),
        component=connected_components(n, src, dst),
    )


def _empty_graph() -> UserGraph:
    """The graph of no triples: no nodes, no edges, no segments."""
    import numpy as np

    empty_s16 = np.zeros(0, dtype="S16")
    empty_i = np.zeros(0, dtype=np.int32)
    return UserGraph(
        node_keys=empty_s16,
        key_nodes=empty_i,
        degree=np.zeros(0),
        indptr=np.zeros(1, dtype=np.int32),
        indices=empty_i,
        norm_data=np.zeros(0),
        edge_src=empty_i,
        edge_dst=empty_i,
        edge_triple=empty_s16,
        segment_keys=empty_s16,
        segment_indptr=np.zeros(1, dtype=np.int64),
        segment_nodes=empty_i,
        segment_end_s=np.zeros(0),
        component=empty_i,
    )


def _numbered_nodes(
    subject_keys: Sequence[bytes] | np.ndarray, object_keys: Sequence[bytes] | np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The sorted node keys, each key's node index, and each of the m edges' subject and object node index."""
    import numpy as np

    subjects = np.array(subject_keys, dtype="S16")
    objects = np.array(object_keys, dtype="S16")
    node_keys, inverse = np.unique(np.concatenate([subjects, objects]), return_inverse=True)
    # Nodes are numbered by falling degree (ties by key): the hubs' entries of every product's vector
    # then share cache lines, which makes a sparse product ~1/3 faster on a memory graph (bench_ppr).
    key_degree = np.bincount(inverse, minlength=node_keys.shape[0])
    key_nodes = np.empty(node_keys.shape[0], dtype=np.int32)
    key_nodes[np.argsort(-key_degree, kind="stable")] = np.arange(node_keys.shape[0], dtype=np.int32)
    return node_keys, key_nodes, key_nodes[inverse[:m]], key_nodes[inverse[m:]]


def _normalised_adjacency(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[csr_matrix, np.ndarray, np.ndarray]:
    """The undirected adjacency A of n nodes (CSR), its weighted degrees, and the entries of D^-1/2 A D^-1/2."""
    import numpy as np
    from scipy.sparse import coo_matrix

    ones = np.ones(src.shape[0])
    # Undirected: each triple contributes A[s,o] and A[o,s]; a self-loop contributes 2 to A[s,s].
    adjacency = coo_matrix(
        (np.concatenate([ones, ones]), (np.concatenate([src, dst]), np.concatenate([dst, src]))), shape=(n, n)
    ).tocsr()
    adjacency.sum_duplicates()
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inv_sqrt = np.zeros(n)
    nonzero = degree > 0
    inv_sqrt[nonzero] = 1.0 / np.sqrt(degree[nonzero])
    # Row i of S holds A[i,j] * d_i^-1/2 * d_j^-1/2.
    row_of_entry = np.repeat(np.arange(n), np.diff(adjacency.indptr))
    norm_data = adjacency.data * inv_sqrt[row_of_entry] * inv_sqrt[adjacency.indices]
    return adjacency, degree, norm_data


def _segment_node_incidence(
    n: int, segment_count: int, seg_index: np.ndarray, src: np.ndarray, dst: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """CSR rows (indptr, int32 node indices) of the segment x node incidence, each node once per segment."""
    import numpy as np

    # Every segment has at least one triple.
    pairs = np.sort(
        np.concatenate([seg_index, seg_index]).astype(np.int64) * n + np.concatenate([src, dst]).astype(np.int64)
    )
    pairs = pairs[np.concatenate([[True], pairs[1:] != pairs[:-1]])]
    segment_of_pair = pairs // n
    segment_indptr = np.searchsorted(segment_of_pair, np.arange(segment_count + 1)).astype(
        np.int64 if pairs.size > 2**31 - 1 else np.int32
    )
    return segment_indptr, (pairs % n).astype(np.int32)


def connected_components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """int32 component label (0..k-1, in order of each component's smallest node) of each of n nodes.

    Min-label hooking with pointer jumping, in numpy: scipy.sparse.csgraph would pull scipy.linalg and
    its BLAS (30 MB) into the chat functions' package for this one call.
    """
    import numpy as np

    labels = np.arange(n, dtype=np.int64)
    a, b = src.astype(np.int64), dst.astype(np.int64)
    while True:
        root_a, root_b = labels[a], labels[b]
        low = np.minimum(root_a, root_b)
        hooked = labels.copy()
        np.minimum.at(hooked, root_a, low)  # each root points at the smallest root it touches
        np.minimum.at(hooked, root_b, low)
        while True:  # pointer jumping: every node to its root
            jumped = hooked[hooked]
            if np.array_equal(jumped, hooked):
                break
            hooked = jumped
        if np.array_equal(hooked, labels):
            break
        labels = hooked
    return np.asarray(np.unique(labels, return_inverse=True)[1], dtype=np.int32)


def build_graph(db: Database, key: GraphKey) -> UserGraph:
    """Read the user's triples of this memory type (and scale) and build the compact graph.

    Episodic: triples of segments whose duration is the scale. Semantic: valid (not invalidated) triples.
    """
    with db.unit_of_work(key.user_id) as session:
        packed = packed_edges(session, key.user_id, key.memory_type, key.scale)
    if not packed:
        return graph_from_edges([], [], [], [])
    import numpy as np

    rows = np.frombuffer(packed, dtype=np.dtype(PACKED_EDGE_LAYOUT))
    return graph_from_edges(
        rows["subject"],
        rows["object"],
        rows["triple"],
        rows["segment"],
        rows["end_s"],
        keep_edges=key.memory_type == MemoryType.SEMANTIC,
    )


def key_to_uuid(key: bytes) -> uuid.UUID:
    """A 16-byte key (numpy S16 strips trailing NULs, so pad) as a UUID."""
    return uuid.UUID(bytes=bytes(key).ljust(16, b"\x00"))
