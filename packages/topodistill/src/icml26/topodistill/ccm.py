"""Convergent cross mapping (Sugihara et al. 2012, Science 338:496).

If ``x`` drives ``y``, the shadow manifold of ``y`` carries the state of ``x``:
neighbours on ``M_y`` point to times with similar ``x``, so ``x`` can be estimated
("cross-mapped") from ``M_y``, and the estimate improves as the library grows.

Conventions (pyEDM's): ``ccm(x, y)`` reconstructs ``M_x`` and cross-maps ``y``;
pyEDM labels it ``"x:y"``. High, convergent ``x:y`` skill is evidence that
**y causes x**. :func:`cross_map` is the engine on any manifold (delay embedding or
a learned one); :func:`ccm` delay-embeds a series first.

The estimate (simplex cross-map): for each point ``t`` of the manifold, its ``k = E+1``
nearest library neighbours ``t_1..t_k`` (self and the Theiler window ``|t − s| ≤ r``
excluded), weights ``w_j ∝ exp(−d_j / d_1)``, ``ŷ(t) = Σ_j w_j y(t_j + Tp)``; skill
``ρ = corr(ŷ, y)`` over all points, averaged over ``samples`` random libraries of
each size (drawn without replacement, as pyEDM does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml26.topodistill.embedding import (
    check_exclusion_radius,
    check_series,
    delay_embed,
    simplex_weights,
)
from icml26.topodistill.neighbours import (
    CandidateTable,
    default_device,
    direct_search,
    library_neighbours,
    use_direct_search,
)

__all__ = ["CCMResult", "ccm", "cross_map", "library_sizes"]

_CHUNK_ELEMENTS = 8_000_000


@dataclass(frozen=True)
class CCMResult:
    """Cross-map skill against library size.

    ``skill`` is (n_lib, samples): one Pearson ρ per library subsample (NaN when a
    subsample could not predict). ``label`` reads ``"x:y"``: M_x cross-maps y, which
    tests y → x.
    """

    lib_sizes: np.ndarray
    skill: np.ndarray
    E: int
    tau: int
    k: int
    exclusion_radius: int
    label: str = "x:y"

    @property
    def mean_skill(self) -> np.ndarray:
        """ρ averaged over subsamples, one per library size."""
        return np.nanmean(self.skill, axis=1)

    @property
    def final_skill(self) -> float:
        """ρ at the largest library."""
        return float(self.mean_skill[-1])

    @property
    def convergence(self) -> float:
        """ρ(L_max) − ρ(L_min): positive when skill grows with the library."""
        return float(self.mean_skill[-1] - self.mean_skill[0])

    def as_dict(self) -> dict:
        return {
            "label": self.label,
            "lib_sizes": self.lib_sizes.tolist(),
            "mean_skill": self.mean_skill.tolist(),
            "E": self.E,
            "tau": self.tau,
            "k": self.k,
            "exclusion_radius": self.exclusion_radius,
        }


def library_sizes(n_points: int, count: int = 5, *, smallest: int | None = None) -> np.ndarray:
    """``count`` library sizes spread evenly from ``smallest`` (default 10 %) to ``n_points``."""
    if n_points < 4:
        raise ValueError(f"need at least 4 manifold points, got {n_points}")
    smallest = smallest or max(4, n_points // 10)
    return np.unique(np.linspace(smallest, n_points, count).astype(int))


def _draw_libraries(rng: np.random.Generator, m: int, size: int, samples: int) -> np.ndarray:
    """(samples, m) boolean masks, each with ``size`` points drawn without replacement."""
    if size >= m:
        return np.ones((samples, m), dtype=bool)
    keys = rng.random((samples, m))
    chosen = np.argpartition(keys, size - 1, axis=1)[:, :size]
    mask = np.zeros((samples, m), dtype=bool)
    np.put_along_axis(mask, chosen, True, axis=1)
    return mask


def _masked_pearson(pred: torch.Tensor, truth: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Pearson ρ over the last axis counting only ``valid`` entries; NaN under 3 points."""
    v = valid.to(pred.dtype)
    n = v.sum(-1, keepdim=True)
    safe_n = n.clamp(min=1)
    pm = pred - (pred * v).sum(-1, keepdim=True) / safe_n
    tm = truth - (truth * v).sum(-1, keepdim=True) / safe_n
    cov = (pm * tm * v).sum(-1)
    den = torch.sqrt((pm * pm * v).sum(-1) * (tm * tm * v).sum(-1))
    rho = torch.where(den > 0, cov / torch.where(den > 0, den, torch.ones_like(den)), 0.0)
    return torch.where(n.squeeze(-1) >= 3, rho, torch.nan)


def cross_map(
    manifold: np.ndarray | torch.Tensor,
    targets: np.ndarray,
    lib_sizes: Sequence[int] | np.ndarray,
    *,
    samples: int = 50,
    k: int | None = None,
    exclusion_radius: int = 0,
    times: np.ndarray | None = None,
    rng: np.random.Generator,
    device: torch.device | str | None = None,
) -> np.ndarray:
    """Simplex cross-map skill of ``targets`` from ``manifold``, all subsamples at once.

    ``manifold`` is (M, D) — any reconstruction, one row per time ``times[r]``
    (default ``0..M−1``); ``targets`` is (M,) or (n_targets, M), aligned with the rows
    (``targets[:, r]`` is the value to estimate at row ``r``). ``k`` defaults to D + 1.
    Returns skills (n_lib, samples, n_targets): the same library subsamples serve
    every target, so surrogate targets cost one gather each.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    device = torch.device(device) if device is not None else default_device()
    pts = torch.as_tensor(np.asarray(manifold) if not torch.is_tensor(manifold) else manifold)
    pts = pts.to(device, torch.float64)
    if pts.ndim != 2:
        raise ValueError(f"manifold must be (M, D), got shape {tuple(pts.shape)}")
    if not bool(torch.isfinite(pts).all()):
        raise ValueError("manifold contains NaN or inf")
    m, dim = pts.shape
    tgt = np.atleast_2d(np.asarray(targets, dtype=float))
    if tgt.shape[1] != m:
        raise ValueError(f"targets must have {m} columns (one per manifold row), got {tgt.shape}")
    if not np.all(np.isfinite(tgt)):
        raise ValueError("targets contain NaN or inf")
    if np.any(np.ptp(tgt, axis=1) == 0):
        raise ValueError("a target is constant: its cross-map skill (a correlation) is undefined")
    times = np.arange(m) if times is None else np.asarray(times)
    if times.shape != (m,):
        raise ValueError(f"times must be ({m},), got {times.shape}")
    k = dim + 1 if k is None else int(k)
    sizes = np.asarray(lib_sizes, dtype=int)
    if sizes.ndim != 1 or sizes.size == 0:
        raise ValueError("lib_sizes must be a non-empty 1-D sequence of integers")
    if sizes.min() < k + 1:
        raise ValueError(f"the smallest library ({sizes.min()}) must exceed k = {k}")
    if sizes.max() > m:
        raise ValueError(f"the largest library ({sizes.max()}) exceeds the {m} manifold points")
    if samples < 1:
        raise ValueError(f"samples must be positive, got {samples}")
    exclusion_radius = check_exclusion_radius(exclusion_radius, m, k)

    direct = [use_direct_search(m, int(size), k) for size in sizes]
    table_sizes = [int(size) for size, d in zip(sizes, direct, strict=True) if not d]
    table = None
    if table_sizes:
        depth = max(k, CandidateTable.depth_for(m, min(table_sizes), k))
        table = CandidateTable.build(
            pts, times, exclusion_radius=exclusion_radius, depth=depth, device=device
        )
    t_rows = torch.as_tensor(times, device=device)
    y = torch.as_tensor(tgt, device=device)
    n_t = y.shape[0]
    out = np.empty((sizes.size, samples, n_t))
    for li, size in enumerate(sizes):
        mask = torch.as_tensor(_draw_libraries(rng, m, int(size), samples), device=device)
        if direct[li]:
            dist, index = direct_search(pts, t_rows, mask, k, exclusion_radius)  # (S, M, k)
        else:
            dist, index = library_neighbours(table, mask, k)
        w = simplex_weights(dist)
        valid = torch.isfinite(dist[..., -1])  # fewer than k admissible neighbours: missing
        per = max(1, _CHUNK_ELEMENTS // (n_t * m * k))
        for s0 in range(0, samples, per):
            idx, ww, ok = index[s0 : s0 + per], w[s0 : s0 + per], valid[s0 : s0 + per]
            pred = (y[:, idx] * ww[None]).sum(-1)  # (n_t, S_c, M)
            rho = _masked_pearson(pred, y[:, None, :].expand_as(pred), ok[None].expand_as(pred))
            out[li, s0 : s0 + per] = rho.T.cpu().numpy()
    return out


def ccm(
    x: object,
    y: object,
    *,
    E: int,
    tau: int = 1,
    lib_sizes: Sequence[int] | np.ndarray | None = None,
    samples: int = 50,
    exclusion_radius: int = 0,
    Tp: int = 0,
    k: int | None = None,
    seed: int | np.random.Generator = 0,
    device: torch.device | str | None = None,
) -> CCMResult:
    """CCM ``x:y``: cross-map ``y`` from the delay embedding of ``x`` (tests y → x).

    ``lib_sizes`` default to five sizes from 10 % to all of the embedded points;
    sizes above the number of embedded points raise. ``Tp`` shifts the target
    (``y(t + Tp)``; 0 is classic CCM). ``seed`` is an int or a numpy Generator.
    """
    xs = check_series(x, "x", varying=True)
    ys = check_series(y, "y", varying=True)
    if xs.size != ys.size:
        raise ValueError(f"x and y differ in length: {xs.size} vs {ys.size}")
    vectors, times = delay_embed(xs, E, tau)
    keep = (times + Tp >= 0) & (times + Tp < ys.size)
    vectors, times = vectors[keep], times[keep]
    if lib_sizes is None:
        lib_sizes = library_sizes(times.size)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    skill = cross_map(
        vectors,
        ys[times + Tp],
        lib_sizes,
        samples=samples,
        k=k,
        exclusion_radius=exclusion_radius,
        times=times,
        rng=rng,
        device=device,
    )[..., 0]
    return CCMResult(
        lib_sizes=np.asarray(lib_sizes, dtype=int),
        skill=skill,
        E=int(E),
        tau=int(tau),
        k=E + 1 if k is None else int(k),
        exclusion_radius=int(exclusion_radius),
    )
