"""Personalized PageRank on a cached user graph, matching igraph's prpack on the undirected graph.

igraph `personalized_pagerank(implementation="prpack", directed=False)` solves
    x = d * P^T x + (d * sum(x[dangling]) + 1 - d) * v,   P = D^-1 A,  v = reset / sum(reset)
(prpack is called with u = v = the reset vector, so dangling mass jumps back to the seeds) and
normalises x to sum 1. On an undirected graph the dangling nodes are exactly the isolated ones; they
receive nothing from other nodes, so the dangling term only rescales x. Hence x = z / sum(z) with
    (I - d A D^-1) z = v  on non-isolated nodes,   z = v  on isolated nodes.
With z = D^1/2 y this is the symmetric positive definite system M y = D^-1/2 v, M = I - d S,
S = D^-1/2 A D^-1/2, solved by conjugate gradients with one CSR product per step.

Deflation. On each connected component C, u_C = D^1/2 1_C / |D^1/2 1_C| is an eigenvector of S with
eigenvalue 1 (the random walk's stationary distribution), so M u_C = (1 - d) u_C, M's smallest
eigenvalue. Along the seeded components' u_C the solution is exact, (u_C . b) / (1 - d), and CG runs on
the rest. Measured on the 1M-edge benchmark graph this saves only 1-2 of ~19 products at 1e-8 (CG finds
an isolated eigenvalue by itself; the slow modes are local ones at +-0.87 on pendant paths), but it
keeps components without a seed exactly zero.

Tolerance. The exact solve (`tolerance` 1e-8, float64) is what the scores are tested against.
Rankings need far less: `TOP_K_TOLERANCE` (relative residual 1e-5, float32 products) gives the same
top-50, in the same order, as a 1e-11 solve on 100 of 100 random queries at 100k and 1M edges (1e-4:
99 of 100 sets) in 8-10 products instead of 17-19. Not used, by measurement (docs/decisions/0003-ppr-solver.md): a
local push (Andersen-Chung-Lang) — on these expander-like graphs the top-50 mixes the seeds' neighbours
with global high-degree nodes, and a push accurate enough to order them touches the graph 10-40 times
over, even with the hubs' PPR vectors precomputed; eliminating pendant trees (the 2-core) left the
iteration count unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from worldmm.graph.build import UserGraph

# Relative residual at which every benchmark query's top-50 equals the exact solve's (bench.bench_ppr).
TOP_K_TOLERANCE = 1e-5
# Below this tolerance the products run in float64; above it float32 halves the memory traffic.
_FLOAT32_ABOVE = 1e-6
_DEFLATED_COMPONENTS = 4


def personalized_pagerank(
    graph: UserGraph,
    reset: np.ndarray,
    *,
    damping: float = 0.85,
    tolerance: float = 1e-8,
    max_iterations: int = 100,
) -> np.ndarray:
    """PPR scores (summing to 1) of every node for the non-negative personalisation vector `reset`.

    `tolerance` is the relative residual of the linear solve: 1e-8 for scores, `TOP_K_TOLERANCE`
    when only the ranking of the top nodes matters.
    """
    import numpy as np

    n = graph.node_count
    reset = np.asarray(reset, dtype=np.float64)
    if reset.shape != (n,):
        raise ValueError(f"reset vector has shape {reset.shape}, graph has {n} nodes")
    if np.any(reset < 0):
        raise ValueError("reset vector must be non-negative")
    total = float(reset.sum())
    if n == 0 or total <= 0:
        return np.zeros(n)
    v = reset / total

    sqrt_deg, inv_sqrt, component_norm = graph.walk_vectors()
    rhs = v * inv_sqrt  # zero on isolated nodes
    z = np.where(sqrt_deg > 0, 0.0, v)  # isolated nodes keep their reset mass
    if rhs.any():
        # The stationary directions of the largest seeded components (the rest converge in a step or two).
        seeded = np.unique(graph.component[rhs > 0])
        seeded = seeded[np.argsort(-component_norm[seeded], kind="stable")[:_DEFLATED_COMPONENTS]]
        directions = [np.where(graph.component == c, sqrt_deg / component_norm[c], 0.0) for c in seeded.tolist()]
        single = tolerance >= _FLOAT32_ABOVE
        y = _deflated_cg(graph, rhs, directions, damping, tolerance, max_iterations, single)
        z += y * sqrt_deg
    np.maximum(z, 0.0, out=z)
    return np.asarray(z / z.sum())


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Inner product without BLAS (threaded BLAS dot products stall on a busy or 1-vCPU host), in the
    arrays' own precision: float32 at the ranking tolerance, like its products (casting to float64 took
    ~15% of a 1M-edge query; the same top-50 sets on 60 of 60 queries)."""
    import numpy as np

    return float(np.einsum("i,i->", a, b))


def _deflated_cg(
    graph: UserGraph,
    rhs: np.ndarray,
    directions: list[np.ndarray],
    damping: float,
    tolerance: float,
    max_iterations: int,
    single: bool,
) -> np.ndarray:
    """Solve (I - d S) y = rhs: along the orthonormal eigenvectors `directions` exactly, the rest by CG."""
    import numpy as np

    s = graph.normalized_adjacency(single=single)
    dtype = np.float32 if single else np.float64
    along = [_dot(u, rhs) for u in directions]
    units: list[np.ndarray] = [u.astype(dtype, copy=False) for u in directions]

    def project_out(vector: np.ndarray) -> None:
        for u in units:
            vector -= u * _dot(u, vector)  # a Python float keeps the array's dtype

    # In-place updates: fresh vector temporaries of this size cost page faults on every step.
    b: np.ndarray = rhs.astype(dtype)
    project_out(b)
    y: np.ndarray = b.copy()
    r: np.ndarray = s @ y
    r *= damping  # r = b - (I - dS) y with y = b
    p = r.copy()
    tmp = np.empty_like(y)
    rs = _dot(r, r)
    stop = (tolerance * float(np.linalg.norm(rhs))) ** 2
    for _ in range(max_iterations):
        if rs <= stop:
            break
        ap = s @ p
        ap *= -damping
        ap += p
        alpha = rs / _dot(p, ap)
        np.multiply(p, alpha, out=tmp)
        y += tmp
        np.multiply(ap, alpha, out=tmp)
        r -= tmp
        project_out(r)  # keep the residual orthogonal to the directions despite rounding
        rs_next = _dot(r, r)
        p *= rs_next / rs
        p += r
        rs = rs_next
    out: np.ndarray = y.astype(np.float64)
    for u, weight in zip(directions, along, strict=True):
        out += (weight / (1.0 - damping)) * u
    return out


def uniform_reset(graph: UserGraph, seeds: np.ndarray) -> np.ndarray:
    """A reset vector with equal weight on each seed node index."""
    import numpy as np

    reset = np.zeros(graph.node_count)
    if seeds.size:
        reset[np.unique(seeds)] = 1.0
    return reset


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first (ties broken by index); zero scores excluded."""
    import numpy as np

    if k <= 0 or scores.size == 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, scores.size)
    candidates = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
    order = np.lexsort((candidates, -scores[candidates]))
    best = candidates[order]
    return np.asarray(best[scores[best] > 0], dtype=np.int64)
