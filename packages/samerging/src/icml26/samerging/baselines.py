"""The data-free merging baselines SA-Merging is compared with.

Every function takes a base and experts (``nn.Module``s or state dicts sharing tensors)
and returns the merged state dict; ``keys`` selects the merged tensors (default: every
floating tensor), the rest is the base's.

* :func:`weight_average` — ``θ_0 + mean_n τ_n`` (model soup of the experts);
* :func:`task_arithmetic` — ``θ_0 + λ Σ τ_n`` (Ilharco et al., 2023; λ ≈ 0.3);
* :func:`ties_merging` — trim to the top-k magnitudes of each *flattened* task vector,
  elect the sign by total mass, disjoint mean (or sum) (Yadav et al., 2023), as
  fusion-bench's ``ties_merging`` computes it;
* :func:`dare` — drop each entry with probability ``p`` and rescale by ``1/(1 − p)``,
  then task arithmetic or TIES (Yu et al., 2024);
* :func:`consensus_ta` — TALL masks ``|τ_t| ≥ λ_t |τ_MTL − τ_t|`` kept where at least
  ``k`` tasks agree, applied to the task-arithmetic vector (Wang et al., 2024);
* :func:`pcb_merging` — Parameter Competition Balancing (Du et al., NeurIPS 2024):
  intra-balancing × inter-balancing scores, each task's top-``ratio`` kept and rescaled,
  a score-weighted mean of the (outlier-clipped) task vectors, as the authors' code
  computes it on the flattened task vectors;
* :func:`wudi` — per linear layer, Adam on ``Σ_n ||(τ − τ_n) τ_nᵀ||² / ||τ_n||²`` started
  from ``Σ τ_n`` (Cheng et al., 2025).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from icml26.samerging.merge import as_state_dict, check_experts, merge_keys, task_vectors

__all__ = [
    "consensus_ta",
    "dare",
    "pcb_merging",
    "pcb_vector",
    "task_arithmetic",
    "ties_merging",
    "weight_average",
    "wudi",
]


def _prepare(base, experts, keys):
    base_sd = as_state_dict(base, "base")
    expert_sds = [as_state_dict(e, f"expert {n}") for n, e in enumerate(experts)]
    names = merge_keys(base_sd, keys)
    check_experts(base_sd, expert_sds, names)
    return base_sd, names, task_vectors(base_sd, expert_sds, names)


def _apply(base_sd, names, delta: dict[str, Tensor], scale: float) -> dict[str, Tensor]:
    out = {k: v.clone() for k, v in base_sd.items()}
    for k in names:
        out[k] = (base_sd[k].to(torch.float64) + scale * delta[k].to(torch.float64)).to(
            base_sd[k].dtype
        )
    return out


def _check_fraction(name: str, value: float, closed: bool = False) -> None:
    ok = 0 < value <= 1 if closed else 0 < value < 1
    if not ok:
        raise ValueError(f"{name} must lie in (0, 1{']' if closed else ')'}, got {value!r}")


def weight_average(base, experts: Sequence, *, keys=None) -> dict[str, Tensor]:
    """``θ_0 + (1/N) Σ τ_n``: the plain average of the experts."""
    base_sd, names, taus = _prepare(base, experts, keys)
    return _apply(base_sd, names, {k: sum(t[k] for t in taus) for k in names}, 1 / len(taus))


def task_arithmetic(base, experts: Sequence, *, scale: float = 0.3, keys=None):
    """``θ_0 + λ Σ τ_n``."""
    base_sd, names, taus = _prepare(base, experts, keys)
    return _apply(base_sd, names, {k: sum(t[k] for t in taus) for k in names}, scale)


def _flatten(taus: list[dict[str, Tensor]], names: list[str]) -> Tensor:
    # in the checkpoints' own dtype: float64 copies would double the time and memory
    dtype = torch.promote_types(taus[0][names[0]].dtype, torch.float32)
    return torch.stack([torch.cat([t[k].flatten().to(dtype) for k in names]) for t in taus])


def _unflatten(flat: Tensor, like: dict[str, Tensor], names: list[str]) -> dict[str, Tensor]:
    out, i = {}, 0
    for k in names:
        n = like[k].numel()
        out[k] = flat[i : i + n].reshape(like[k].shape)
        i += n
    return out


def ties_vector(flat: Tensor, density: float, merge: str = "mean") -> Tensor:
    """TIES on stacked flat task vectors ``(N, d)``: trim, elect, disjoint merge."""
    _n, d = flat.shape
    k = d - int(d * density)
    kth = flat.abs().kthvalue(max(k, 1), dim=1, keepdim=True).values
    trimmed = flat * (flat.abs() >= kth)
    sign = torch.sign(trimmed.sum(0))
    sign[sign == 0] = torch.sign(sign.sum())  # zero mass: the majority sign
    agree = torch.where(sign.unsqueeze(0) > 0, trimmed > 0, trimmed < 0)
    selected = trimmed * agree
    if merge == "sum":
        return selected.sum(0)
    if merge == "mean":
        return selected.sum(0) / (selected != 0).sum(0).clamp(min=1)
    raise ValueError(f"merge must be 'mean' or 'sum', got {merge!r}")


def ties_merging(
    base, experts: Sequence, *, density: float = 0.2, scale: float = 0.3, merge="mean", keys=None
):
    """TIES-Merging: top-``density`` trim per task vector, sign election, disjoint merge."""
    _check_fraction("density", density, closed=True)
    base_sd, names, taus = _prepare(base, experts, keys)
    merged = ties_vector(_flatten(taus, names), density, merge)
    return _apply(base_sd, names, _unflatten(merged, taus[0], names), scale)


def _row_quantile(x: Tensor, index: int) -> Tensor:
    """The ``index``-th smallest entry (0-based) of each row, shape ``(N, 1)``."""
    return x.kthvalue(index + 1, dim=1, keepdim=True).values


def _row_minmax(x: Tensor) -> Tensor:
    """``(x − min) / (max − min)`` per row; a constant row gives zeros (not NaN)."""
    lo = x.min(dim=1, keepdim=True).values
    hi = x.max(dim=1, keepdim=True).values
    span = hi - lo
    return torch.where(span > 0, (x - lo) / torch.where(span > 0, span, 1), 0)


def pcb_vector(flat: Tensor, ratio: float = 0.1, clip: float = 1e-4) -> Tensor:
    """PCB-Merging on stacked flat task vectors ``(N, d)`` (Du et al., 2024).

    With ``N`` tasks and per-row (per-task) operations:

    1. ``|τ_n|`` clipped to its own ``[q_clip, q_{1−clip}]`` quantiles (entries
       ``int(d·clip)`` and ``int(d·(1 − clip)) − 1`` of the sorted row); ``τ̃_n =
       sign(τ_n) |τ_n|_clipped``;
    2. intra-balancing ``exp(N · minmax(|τ_n|_clipped)²)`` (the paper's softmax over the
       row: its normaliser is a per-row constant that step 4's min-max removes);
    3. inter-balancing ``tanh(τ_n ⊙ Σ_m τ_m)``;
    4. ``β_n`` = intra × inter, raised to the row's ``int(d·(1 − ratio))``-th smallest
       entry and min-max rescaled to ``[0, 1]`` (``β̂_n``): the entries at or below that
       floor get weight 0, about a fraction ``ratio`` of each task's entries a weight > 0;
    5. ``τ = Σ_n β̂_n ⊙ τ̃_n / max(Σ_n β̂_n, 1e-12)``.
    """
    _check_fraction("ratio", ratio, closed=True)
    if not 0 <= clip < 0.5:
        raise ValueError(f"clip must lie in [0, 0.5), got {clip!r}")
    n, d = flat.shape
    mag = flat.abs()
    lo = _row_quantile(mag, int(d * clip))
    hi = _row_quantile(mag, int(d * (1 - clip)) - 1)
    mag = torch.minimum(torch.maximum(mag, lo), hi)
    clipped = torch.sign(flat) * mag
    intra = torch.exp(n * _row_minmax(mag) ** 2)
    inter = torch.tanh(flat * flat.sum(0, keepdim=True))
    beta = intra * inter
    floor = _row_quantile(beta, min(int(d * (1 - ratio)), d - 1))
    weight = _row_minmax(torch.maximum(beta, floor))
    return (clipped * weight).sum(0) / weight.sum(0).clamp(min=1e-12)


def pcb_merging(
    base, experts: Sequence, *, ratio: float = 0.1, scale: float = 1.0, clip: float = 1e-4,
    keys=None,
) -> dict[str, Tensor]:  # fmt: skip
    """PCB-Merging: ``θ_0 + λ · PCB(τ_1..τ_N)`` over the flattened task vectors
    (:func:`pcb_vector`; ``ratio`` is the fraction of each task's entries kept)."""
    base_sd, names, taus = _prepare(base, experts, keys)
    merged = pcb_vector(_flatten(taus, names), ratio, clip)
    return _apply(base_sd, names, _unflatten(merged, taus[0], names), scale)


def dare(
    base,
    experts: Sequence,
    *,
    drop: float = 0.9,
    scale: float = 0.3,
    then: str = "ties",
    density: float = 0.2,
    generator: torch.Generator | None = None,
    keys=None,
):
    """DARE: drop each entry with probability ``drop``, rescale by ``1/(1 − drop)``, then
    ``then="ta"`` (task arithmetic) or ``"ties"`` (TIES at ``density``)."""
    _check_fraction("drop", drop)
    if then not in ("ta", "ties"):
        raise ValueError(f"then must be 'ta' or 'ties', got {then!r}")
    base_sd, names, taus = _prepare(base, experts, keys)
    dropped = []
    for t in taus:
        d = {}
        for k in names:
            keep = torch.rand(t[k].shape, generator=generator) >= drop
            d[k] = t[k].to(torch.float64) * keep.to(t[k].device) / (1 - drop)
        dropped.append(d)
    if then == "ta":
        return _apply(base_sd, names, {k: sum(t[k] for t in dropped) for k in names}, scale)
    merged = ties_vector(_flatten(dropped, names), density, "mean")
    return _apply(base_sd, names, _unflatten(merged, dropped[0], names), scale)


def consensus_ta(
    base, experts: Sequence, *, scale: float = 0.3, tall: float = 0.4, agree: int = 2, keys=None
):
    """Consensus task arithmetic: keep ``τ_MTL`` where ≥ ``agree`` TALL masks are on."""
    if agree < 1:
        raise ValueError(f"agree must be >= 1, got {agree}")
    base_sd, names, taus = _prepare(base, experts, keys)
    out = {}
    for k in names:
        mtl = sum(t[k] for t in taus)
        votes = sum((t[k].abs() >= tall * (mtl - t[k]).abs()).to(torch.int64) for t in taus)
        out[k] = mtl * (votes >= agree)
    return _apply(base_sd, names, out, scale)


def wudi(
    base, experts: Sequence, *, lr: float = 1e-5, steps: int = 300, keys=None
) -> dict[str, Tensor]:
    """WUDI-Merging, data-free: per 2-D weight, Adam (``lr``, ``steps``; the paper's 1e-5
    and 300) on ``Σ_n ||(τ − τ_n) τ_nᵀ||² / ||τ_n||²`` from ``τ = Σ τ_n``; other tensors
    (biases) take the sum of the task vectors, as task arithmetic with λ = 1."""
    if steps < 0 or lr <= 0:
        raise ValueError(f"need lr > 0 and steps >= 0, got lr={lr}, steps={steps}")
    base_sd, names, taus = _prepare(base, experts, keys)
    out = {}
    for k in names:
        ts = [t[k].to(torch.float64) for t in taus]
        start = sum(ts)
        if ts[0].ndim != 2 or steps == 0:
            out[k] = start
            continue
        # the loss's gradient is 2 (τ M − C), M = Σ w_n τ_nᵀ τ_n, C = Σ w_n τ_n τ_nᵀ τ_n
        weights = [1.0 / (float(t.pow(2).sum()) + 1e-30) for t in ts]
        gram = [t.T @ t for t in ts]
        m = sum(w * g for w, g in zip(weights, gram, strict=True))
        c = sum(w * t @ g for w, t, g in zip(weights, ts, gram, strict=True))
        tau = start.clone().requires_grad_(True)
        opt = torch.optim.Adam([tau], lr=lr)
        for _ in range(steps):
            with torch.no_grad():
                tau.grad = 2 * (tau @ m - c)
            opt.step()
        out[k] = tau.detach()
    return _apply(base_sd, names, out, 1.0)
