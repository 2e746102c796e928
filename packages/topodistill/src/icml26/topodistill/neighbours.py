"""Nearest neighbours for cross mapping, vectorised over library subsamples.

CCM draws, for each library size ``L``, ``S`` random libraries of ``L`` points and
asks for every point of the manifold its ``k`` nearest *library* neighbours, leaving
out the point itself and every point within the Theiler window ``|t − s| ≤ r``
(Theiler 1986). Building a tree per subsample (as pyEDM does) repeats the same
geometry ``S × n_L`` times. Here each row's candidates are sorted once (Theiler
pairs removed); the ``k`` nearest library neighbours of row ``i`` in subsample
``s`` are then the first ``k`` candidates of row ``i`` that belong to library
``s`` — a gather and a ``topk`` over a short prefix of the sorted candidates, for
all subsamples at once. Rows whose prefix holds fewer than ``k`` library points
(rare; the prefix is sized for it) are answered exactly from the full distances.

The search is chosen by size, every path exact:

- the candidate table comes from one dense distance block per chunk of rows for
  manifolds up to :data:`KDTREE_MIN_POINTS` points, and from a KD-tree
  (``scipy.spatial.cKDTree``, queried for ``depth + 2r + 1`` neighbours, Theiler pairs
  then dropped) for larger manifolds on the CPU;
- small libraries (``L ≤`` the prefix depth, about ``L² ≤ 2 (k + 1) M``) skip the
  table: each subsample's ``M × L`` distances are computed directly, which is cheaper
  than walking a prefix of length ``≈ 2 (k + 1) M / L``.

Distances are Euclidean, as in pyEDM's KD-trees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "KDTREE_MIN_POINTS",
    "CandidateTable",
    "default_device",
    "direct_search",
    "library_neighbours",
    "nearest_neighbours",
    "use_direct_search",
]

# Expected library points in a prefix: at least PREFIX_SAFETY · (k + 1). At 2 the chance
# that a prefix lacks k library points is below 1 % per row (E = 2, a library of 10 % of
# the manifold); those rows fall back to an exact search, so the answer is always exact.
PREFIX_SAFETY = 2.0
_CHUNK_ELEMENTS = 8_000_000
# manifolds above this many points build their candidate table with a KD-tree (CPU)
KDTREE_MIN_POINTS = 2_000


def default_device() -> torch.device:
    """CUDA when present, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _as_tensor(x: np.ndarray | torch.Tensor, device: torch.device, dtype=torch.float64):
    return torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x).to(device, dtype)


def _excluded(ti: torch.Tensor, tj: torch.Tensor, radius: int) -> torch.Tensor:
    """Pairs within the Theiler window (|ti − tj| ≤ radius; radius 0 removes self only)."""
    return (ti[:, None] - tj[None, :]).abs() <= radius


def nearest_neighbours(
    query: np.ndarray | torch.Tensor,
    library: np.ndarray | torch.Tensor,
    k: int,
    *,
    query_times: np.ndarray | None = None,
    library_times: np.ndarray | None = None,
    exclusion_radius: int = -1,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` nearest library points of every query point (Euclidean).

    Pairs with ``|t_query − t_library| ≤ exclusion_radius`` are never neighbours
    (``exclusion_radius = 0`` removes exact self-matches in time; ``-1`` removes
    nothing). Returns ``(distances, indices)``, both (n_query, k), sorted by distance;
    a query with fewer than ``k`` admissible points gets ``inf`` distances there.
    """
    device = torch.device(device) if device is not None else default_device()
    q = _as_tensor(query, device)
    lib = _as_tensor(library, device)
    if q.ndim != 2 or lib.ndim != 2 or q.shape[1] != lib.shape[1]:
        raise ValueError(f"query and library must be (n, D) alike, got {q.shape}, {lib.shape}")
    k = min(int(k), lib.shape[0])
    if exclusion_radius >= 0:
        if query_times is None or library_times is None:
            raise ValueError("exclusion needs query_times and library_times")
        tq = torch.as_tensor(np.asarray(query_times), device=device)
        tl = torch.as_tensor(np.asarray(library_times), device=device)
    chunk = max(1, _CHUNK_ELEMENTS // max(1, lib.shape[0]))
    dists, idxs = [], []
    for start in range(0, q.shape[0], chunk):
        d = torch.cdist(q[start : start + chunk], lib)
        if exclusion_radius >= 0:
            d = d.masked_fill(_excluded(tq[start : start + chunk], tl, exclusion_radius), math.inf)
        val, ind = torch.topk(d, k, dim=1, largest=False, sorted=True)
        dists.append(val)
        idxs.append(ind)
    return torch.cat(dists), torch.cat(idxs)


@dataclass
class CandidateTable:
    """Every row's admissible neighbours, sorted by distance, truncated to ``depth``.

    ``order[i]`` lists row indices (Theiler window and self removed) in order of
    distance from row ``i``; ``dist[i]`` their distances (``inf`` past the admissible
    ones). Built once per manifold and reused for every library subsample.
    """

    points: torch.Tensor  # (M, D)
    times: torch.Tensor  # (M,)
    exclusion_radius: int
    order: torch.Tensor  # (M, depth) int64
    dist: torch.Tensor  # (M, depth)

    @classmethod
    def build(
        cls,
        points: np.ndarray | torch.Tensor,
        times: np.ndarray,
        *,
        exclusion_radius: int = 0,
        depth: int | None = None,
        device: torch.device | str | None = None,
    ) -> CandidateTable:
        device = torch.device(device) if device is not None else default_device()
        pts = _as_tensor(points, device)
        t = torch.as_tensor(np.asarray(times), device=device)
        m = pts.shape[0]
        depth = m if depth is None else max(1, min(int(depth), m))
        radius = max(0, exclusion_radius)
        if device.type == "cpu" and m > KDTREE_MIN_POINTS and depth + 2 * radius + 1 < m:
            order, dist = _kdtree_candidates(pts.numpy(), t.numpy(), radius, depth)
            return cls(pts, t, radius, torch.from_numpy(order), torch.from_numpy(dist))
        chunk = max(1, _CHUNK_ELEMENTS // max(1, m))
        orders, dists = [], []
        for start in range(0, m, chunk):
            d = torch.cdist(pts[start : start + chunk], pts)
            d = d.masked_fill(
                _excluded(t[start : start + chunk], t, max(0, exclusion_radius)), math.inf
            )
            val, ind = torch.topk(d, depth, dim=1, largest=False, sorted=True)
            orders.append(ind)
            dists.append(val)
        return cls(pts, t, max(0, exclusion_radius), torch.cat(orders), torch.cat(dists))

    @staticmethod
    def depth_for(m: int, min_library: int, k: int) -> int:
        """Prefix length that holds ``k`` library points w.h.p. for the smallest library."""
        return min(m, math.ceil(PREFIX_SAFETY * (k + 1) * m / max(1, min_library)) + 16)


def _kdtree_candidates(
    points: np.ndarray, times: np.ndarray, radius: int, depth: int
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``depth`` admissible neighbours of every row from a KD-tree.

    At most ``2r + 1`` of a row's nearest points lie in its Theiler window, so querying
    ``depth + 2r + 1`` and dropping those leaves at least ``depth`` admissible ones.
    """
    from scipy.spatial import cKDTree

    want = depth + 2 * radius + 1
    dist, order = cKDTree(points).query(points, k=want)
    dist, order = np.atleast_2d(dist), np.atleast_2d(order)
    bad = np.abs(times[:, None] - times[order]) <= radius
    # stable: admissible candidates first, each group still sorted by distance
    keep = np.argsort(bad, axis=1, kind="stable")[:, :depth]
    order = np.take_along_axis(order, keep, axis=1)
    dist = np.take_along_axis(np.where(bad, np.inf, dist), keep, axis=1)
    return order.astype(np.int64), dist.astype(np.float64)


def use_direct_search(m: int, size: int, k: int) -> bool:
    """Whether a library of ``size`` points is searched directly (``M × L`` per subsample)."""
    return size < m and size <= CandidateTable.depth_for(m, size, k)


def direct_search(
    points: torch.Tensor,
    times: torch.Tensor,
    library_mask: torch.Tensor,
    k: int,
    exclusion_radius: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``k`` nearest library neighbours of every row from each library's own distances.

    Same contract as :func:`library_neighbours`: (S, M, k) distances and row indices,
    ``inf`` where fewer than ``k`` admissible library points exist.
    """
    s, m = library_mask.shape
    size = int(library_mask[0].sum())
    members = torch.nonzero(library_mask)[:, 1].view(s, size)  # (S, L), ascending
    per = max(1, _CHUNK_ELEMENTS // max(1, m * size))
    # rows at consecutive times (the usual case): the Theiler pairs of library point p are
    # rows p − r … p + r, written directly instead of comparing all M × L times
    consecutive = bool(torch.all(times[1:] - times[:-1] == 1)) if m > 1 else True
    offsets = torch.arange(-exclusion_radius, exclusion_radius + 1, device=points.device)
    dists, indices = [], []
    for start in range(0, s, per):
        lib = members[start : start + per]  # (S_c, L)
        d = torch.cdist(points[None].expand(lib.shape[0], -1, -1), points[lib])  # (S_c, M, L)
        if consecutive:
            rows = lib[:, None, :] + offsets[None, :, None]  # (S_c, 2r + 1, L)
            sample = torch.arange(lib.shape[0], device=d.device)[:, None, None].expand_as(rows)
            column = torch.arange(size, device=d.device)[None, None, :].expand_as(rows)
            ok = (rows >= 0) & (rows < m)
            d[sample[ok], rows[ok], column[ok]] = math.inf
        else:
            near = (times[:, None][None] - times[lib][:, None, :]).abs() <= exclusion_radius
            d = d.masked_fill(near, math.inf)
        kk = min(k, size)
        val, pos = torch.topk(d, kk, dim=-1, largest=False, sorted=True)
        idx = torch.gather(lib[:, None, :].expand(-1, m, -1), 2, pos)
        if kk < k:
            pad = (0, k - kk)
            val = torch.nn.functional.pad(val, pad, value=math.inf)
            idx = torch.nn.functional.pad(idx, pad, value=0)
        dists.append(val)
        indices.append(idx)
    return torch.cat(dists), torch.cat(indices)


def library_neighbours(
    table: CandidateTable, library_mask: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``k`` nearest library neighbours of every row, for a batch of libraries.

    ``library_mask`` is (S, M) boolean, one library per row, all of the same size.
    Returns ``(dist, index)``, each (S, M, k), sorted by distance; where fewer than
    ``k`` admissible library points exist the distance is ``inf`` (the caller treats
    that prediction as missing).
    """
    s, m = library_mask.shape
    size = int(library_mask[0].sum())
    if size >= m:  # the whole manifold: every subsample is the table's own prefix
        shape = (s, m, k)
        return table.dist[:, :k].expand(shape), table.order[:, :k].expand(shape)
    depth = min(table.order.shape[1], CandidateTable.depth_for(m, size, k))
    # a candidate without admissible distance points at row m, which no library holds;
    # libraries are laid out (M + 1, S) so that gathering a candidate copies one row
    order = table.order[:, :depth]
    candidates = torch.where(torch.isfinite(table.dist[:, :depth]), order, m).reshape(-1)
    member_of = torch.nn.functional.pad(library_mask.to(torch.uint8), (0, 1)).T.contiguous()
    per_sample = max(1, _CHUNK_ELEMENTS // (m * depth))
    dists, indices = [], []
    for start in range(0, s, per_sample):
        chunk = member_of[:, start : start + per_sample].contiguous()
        d, i = _prefix_neighbours(table, chunk, candidates, k, depth)
        dists.append(d)
        indices.append(i)
    return torch.cat(dists), torch.cat(indices)


def _prefix_neighbours(
    table: CandidateTable, member_of: torch.Tensor, candidates: torch.Tensor, k: int, depth: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``k`` library members along each row's sorted prefix.

    ``member[i, s, j]``: candidate ``j`` of row ``i`` is in library ``s``. The flat
    positions of all members come out of one ``nonzero`` in row-major order, so the
    first ``k`` members of ``(i, s)`` are ``k`` consecutive entries, starting at the
    number of members in the rows before it (a cumulative sum of the row counts).
    """
    m, s = member_of.shape[0] - 1, member_of.shape[1]
    device = member_of.device
    member = member_of.index_select(0, candidates).view(m, depth, s).transpose(1, 2)
    member = member.contiguous()  # (M, S, depth)
    count = member.sum(-1, dtype=torch.int32).view(-1).long()  # (M·S,)
    flat = torch.nonzero(member.view(-1)).squeeze(1)
    if flat.numel() == 0:
        cell = torch.zeros((m * s, k), dtype=torch.int64, device=device)
    else:
        first = torch.cumsum(count, 0) - count
        take = (first[:, None] + torch.arange(k, device=device)).clamp(max=flat.numel() - 1)
        pos = flat[take]  # ((i·S + s)·depth + j)
        cell = (pos // (s * depth)) * depth + pos % depth  # i·depth + j in the table
    index = table.order[:, :depth].reshape(-1)[cell].view(m, s, k).transpose(0, 1)
    dist = table.dist[:, :depth].reshape(-1)[cell].view(m, s, k).transpose(0, 1)
    index, dist = index.contiguous(), dist.contiguous()  # (S, M, k)
    short = (count < k).view(m, s).T
    if bool(short.any()):  # exact answer for rows whose prefix was too short
        si, ri = torch.nonzero(short, as_tuple=True)
        d = torch.cdist(table.points[ri], table.points)  # (n_short, M)
        bad = (member_of[:m].T[si] == 0) | _excluded(
            table.times[ri], table.times, table.exclusion_radius
        )
        d = d.masked_fill(bad, math.inf)
        val, ind = torch.topk(d, k, dim=1, largest=False, sorted=True)
        dist[si, ri] = val
        index[si, ri] = ind
    return dist, index
