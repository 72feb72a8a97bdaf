"""Fill-reducing orderings of a symmetric sparsity pattern, for the sparse Cholesky factor.

- ``amd``: approximate minimum degree (Amestoy, Davis & Duff 1996) on a quotient graph:
  elements stand for eliminated cliques, degrees are AMD's upper bounds, elements are
  absorbed (aggressively too) and indistinguishable variables merge into supervariables.
  Left out from the reference code: dense-row detection and the final postorder.
- ``rcm``: reverse Cuthill–McKee from a pseudo-peripheral node of each connected component
  (George & Liu); it narrows the band, which also cuts fill.
- ``natural``: 0, 1, …, n-1.

Each returns ``perm`` with the permuted matrix C[i, j] = A[perm[i], perm[j]].
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence

from .csr import CSR

METHODS = ("amd", "rcm", "natural")


def adjacency(a: CSR) -> list[set[int]]:
    """The neighbours of each node in the pattern of A + Aᵀ (the diagonal left out)."""
    n = a.shape[0]
    adj: list[set[int]] = [set() for _ in range(n)]
    for i in range(n):
        for j in a.indices[a.indptr[i] : a.indptr[i + 1]]:
            if j != i:
                adj[i].add(j)
                adj[j].add(i)
    return adj


def ordering(a: CSR, method: str | Sequence[int] = "amd") -> list[int]:
    """The permutation ``method`` ("amd", "rcm" or "natural") picks for the square matrix
    ``a``; an explicit permutation is checked and passed through."""
    n = a.shape[0]
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"an ordering needs a square matrix, got shape {a.shape}")
    if isinstance(method, str):
        if method == "natural":
            return list(range(n))
        if method == "amd":
            return amd(adjacency(a))
        if method == "rcm":
            return rcm(adjacency(a))
        raise ValueError(f"unknown ordering {method!r}: use one of {', '.join(METHODS)}")
    perm = list(method)
    if sorted(perm) != list(range(n)):
        raise ValueError(f"the ordering is not a permutation of 0..{n - 1}")
    return perm


def amd(adj: list[set[int]]) -> list[int]:
    """Approximate minimum degree on the quotient graph of ``adj`` (consumed)."""
    n = len(adj)
    var_adj = adj  # principal variables next to each variable (edges not yet in an element)
    elem_adj: list[set[int]] = [set() for _ in range(n)]  # elements next to each variable
    members: list[set[int]] = [set() for _ in range(n)]  # variables of each element
    size = [0] * n  # an element's weighted size Σ weight over its members
    weight = [1] * n  # original variables in each supervariable; 0 once merged or eliminated
    merged: list[list[int]] = [[i] for i in range(n)]  # a supervariable's original variables
    degree = [len(s) for s in adj]
    heap = [(degree[i], i) for i in range(n)]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        d, p = heapq.heappop(heap)
        if weight[p] == 0 or d != degree[p]:
            continue  # a stale entry: p was merged, eliminated or got a new degree
        order.extend(merged[p])
        # p becomes element p: its members are its variables and those of its elements,
        # which p absorbs (they are cliques inside the new one)
        absorbed = elem_adj[p]
        new = set(var_adj[p])
        for e in absorbed:
            new |= members[e]
            members[e] = set()
        new.discard(p)
        weight[p] = 0
        members[p] = new
        size[p] = sum(weight[i] for i in new)
        for i in new:
            elem_adj[i] -= absorbed
            elem_adj[i].add(p)
            var_adj[i] -= new  # edges inside the new clique are element p's now
            var_adj[i].discard(p)
        var_adj[p] = set()
        elem_adj[p] = set()
        outside = _outside_sizes(new, p, elem_adj, size, weight)
        for e, w in outside.items():
            if w == 0:  # aggressive absorption: e lies inside p
                for i in members[e]:
                    elem_adj[i].discard(e)
                members[e] = set()
        _merge_indistinguishable(new, var_adj, elem_adj, members, weight, merged)
        remaining = n - len(order)
        for i in new:
            if weight[i] == 0:
                continue
            inside = size[p] - weight[i]  # |Lp \ i|
            bound = sum(weight[j] for j in var_adj[i]) + inside
            bound += sum(outside[e] for e in elem_adj[i] if e != p)
            degree[i] = min(remaining - weight[i], degree[i] + inside, bound)
            heapq.heappush(heap, (degree[i], i))
    return order


def _outside_sizes(
    new: set[int], p: int, elem_adj: list[set[int]], size: list[int], weight: list[int]
) -> dict[int, int]:
    """|Le \\ Lp| (weighted) for every element e ≠ p next to a member of Lp."""
    outside: dict[int, int] = {}
    for i in new:
        for e in elem_adj[i]:
            if e != p:
                outside[e] = outside.get(e, size[e]) - weight[i]
    return outside


def _merge_indistinguishable(
    new: set[int],
    var_adj: list[set[int]],
    elem_adj: list[set[int]],
    members: list[set[int]],
    weight: list[int],
    merged: list[list[int]],
) -> None:
    """Merge variables of Lp with the same variable and element neighbours into one
    supervariable (they would be eliminated one after another anyway)."""
    groups: dict[tuple[frozenset[int], frozenset[int]], int] = {}
    for i in sorted(new):
        key = (frozenset(var_adj[i]), frozenset(elem_adj[i]))
        lead = groups.setdefault(key, i)
        if lead == i:
            continue
        weight[lead] += weight[i]
        weight[i] = 0
        merged[lead].extend(merged[i])
        merged[i] = []
        for e in elem_adj[i]:
            members[e].discard(i)
        for j in var_adj[i]:
            var_adj[j].discard(i)
        var_adj[i] = set()
        elem_adj[i] = set()
    new.intersection_update(i for i in new if weight[i])


def rcm(adj: list[set[int]]) -> list[int]:
    """Reverse Cuthill–McKee: breadth-first from a pseudo-peripheral node of each component,
    neighbours by increasing degree, the whole order reversed."""
    n = len(adj)
    degree = [len(s) for s in adj]
    ranked = [sorted(s, key=lambda j: (degree[j], j)) for s in adj]
    placed = [False] * n
    order: list[int] = []
    for start in sorted(range(n), key=lambda i: (degree[i], i)):
        if placed[start]:
            continue
        root = _pseudo_peripheral(start, ranked, degree)
        placed[root] = True
        queue = deque([root])
        while queue:
            i = queue.popleft()
            order.append(i)
            for j in ranked[i]:
                if not placed[j]:
                    placed[j] = True
                    queue.append(j)
    order.reverse()
    return order


def _levels(root: int, ranked: list[list[int]]) -> list[list[int]]:
    """The breadth-first level sets from ``root``."""
    seen = {root}
    levels = [[root]]
    while True:
        nxt = [j for i in levels[-1] for j in ranked[i] if not (j in seen or seen.add(j))]
        if not nxt:
            return levels
        levels.append(nxt)


def _pseudo_peripheral(start: int, ranked: list[list[int]], degree: list[int]) -> int:
    """George & Liu: hop to a least-degree node of the last level while the eccentricity
    grows."""
    root, levels = start, _levels(start, ranked)
    while True:
        candidate = min(levels[-1], key=lambda j: (degree[j], j))
        candidate_levels = _levels(candidate, ranked)
        if len(candidate_levels) <= len(levels):
            return root
        root, levels = candidate, candidate_levels
