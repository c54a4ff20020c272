"""Personalized PageRank on a cached user graph, matching igraph's prpack on the undirected graph.

igraph `personalized_pagerank(implementation="prpack", directed=False)` solves
    x = d * P^T x + (d * sum(x[dangling]) + 1 - d) * v,   P = D^-1 A,  v = reset / sum(reset)
(prpack is called with u = v = the reset vector, so dangling mass jumps back to the seeds) and
normalises x to sum 1. On an undirected graph the dangling nodes are exactly the isolated ones; they
receive nothing from other nodes, so the dangling term only rescales x. Hence x = z / sum(z) with
    (I - d A D^-1) z = v  on non-isolated nodes,   z = v  on isolated nodes.
With z = D^1/2 y this is the symmetric positive definite system (I - d S) y = D^-1/2 v,
S = D^-1/2 A D^-1/2, whose condition number is at most (1 + d) / (1 - d); conjugate gradients solve
it in about a third of the sparse products power iteration needs (≈ 30 instead of ≈ 110 for 1e-8
at d = 0.85), one cached CSR product per step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from worldmm.graph.build import UserGraph


def personalized_pagerank(
    graph: UserGraph,
    reset: np.ndarray,
    *,
    damping: float = 0.85,
    tolerance: float = 1e-8,
    max_iterations: int = 100,
) -> np.ndarray:
    """PPR scores (summing to 1) of every node for the non-negative personalisation vector `reset`."""
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

    degree = graph.degree
    connected = degree > 0
    z = np.where(connected, 0.0, v)  # isolated nodes keep their reset mass
    if connected.any() and v[connected].any():
        sqrt_deg = np.sqrt(degree)
        inv_sqrt = np.zeros(n)
        inv_sqrt[connected] = 1.0 / sqrt_deg[connected]
        y = _conjugate_gradient(graph, v * inv_sqrt, damping, tolerance, max_iterations)
        z = z + np.where(connected, y * sqrt_deg, 0.0)
    z = np.maximum(z, 0.0)
    return np.asarray(z / z.sum())


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Inner product without BLAS: threaded BLAS dot products stall on a busy or 1-vCPU host."""
    import numpy as np

    return float(np.einsum("i,i->", a, b))


def _conjugate_gradient(
    graph: UserGraph, rhs: np.ndarray, damping: float, tolerance: float, max_iterations: int
) -> np.ndarray:
    """Solve (I - d S) y = rhs by conjugate gradients, starting from y = rhs (the first PPR term)."""
    import numpy as np

    s = graph.normalized_adjacency()
    # In-place updates: fresh vector temporaries of this size cost page faults on every step.
    y = rhs.copy()
    r = s @ y
    r *= damping  # r = rhs - (I - dS) y with y = rhs
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
        rs_next = _dot(r, r)
        p *= rs_next / rs
        p += r
        rs = rs_next
    return np.asarray(y)


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
