"""Neighbourhood distributions and the topology-distillation loss (reconstructed).

The paper's abstract says the delay embedder is distilled "to produce embeddings
whose neighborhood distributions match the global topology". Everything below that
sentence is **reconstructed** in the SNE / t-SNE tradition (Hinton & Roweis 2002;
van der Maaten & Hinton 2008), with the CCM pitfall handled throughout: pairs within
the Theiler window ``|t − s| ≤ W`` are excluded, because temporal neighbours are
neighbours for trivial reasons (autocorrelation), not because of the attractor.

- teacher ``P_{t·}``: ``P_ts ∝ exp(−β_t ‖z^G_t − z^G_s‖²)`` with ``β_t`` set by
  root finding so that the row's perplexity ``exp H(P_t·)`` equals a target
  (:func:`perplexity_affinities`), or a softmax restricted to the ``k`` nearest
  points with temperature ``T_G`` (:func:`knn_affinities`);
- student ``Q_{t·}``: ``∝ (1 + ‖z_t − z_s‖²/T)^{-1}`` (``"student_t"``, t-SNE's heavy
  tail; the default of :class:`~icml26.topodistill.distill.DistillConfig`), or
  ``∝ exp(−‖z_t − z_s‖² / T)`` (``"gaussian"``, SNE), or the teacher's kernel
  ``∝ exp(−β'_t ‖z_t − z_s‖²)`` with ``β'_t`` calibrated (without gradient) to the same
  perplexity (``"calibrated"``, scale-free) (:func:`student_log_affinities`);
- loss ``L_topo = mean_t KL(P_t· ‖ Q_t·)`` (:func:`neighbourhood_kl`).
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "KERNELS",
    "calibrate_beta",
    "knn_affinities",
    "neighbourhood_kl",
    "perplexity_affinities",
    "squared_distances",
    "student_log_affinities",
    "theiler_mask",
]

KERNELS = ("calibrated", "gaussian", "student_t")


def theiler_mask(times: torch.Tensor, radius: int) -> torch.Tensor:
    """(..., B, B) True where a pair may not be neighbours: ``|t − s| ≤ radius`` (self
    included); leading dimensions of ``times`` (..., B) batch independent minibatches."""
    return (times[..., :, None] - times[..., None, :]).abs() <= max(0, int(radius))


def squared_distances(z: torch.Tensor) -> torch.Tensor:
    """Pairwise squared Euclidean distances of the rows of ``z`` (..., B, m) → (..., B, B)."""
    sq = (z * z).sum(-1)
    return (sq[..., :, None] + sq[..., None, :] - 2.0 * z @ z.transpose(-1, -2)).clamp(min=0.0)


def perplexity_affinities(
    sq_dist: torch.Tensor, excluded: torch.Tensor, perplexity: float
) -> torch.Tensor:
    """Row-stochastic ``P`` with each row's perplexity set to ``perplexity`` (bisection on β).

    Shapes (..., B, B): leading dimensions batch independent minibatches. Excluded
    pairs get probability 0. Perplexity must be below the number of admissible points
    per row.
    """
    with torch.no_grad():
        beta = calibrate_beta(sq_dist, excluded, perplexity)
    return torch.softmax(-beta * sq_dist.masked_fill(excluded, math.inf), dim=-1).masked_fill(
        excluded, 0.0
    )


@torch.no_grad()
def calibrate_beta(
    sq_dist: torch.Tensor,
    excluded: torch.Tensor,
    perplexity: float,
    *,
    bisections: int = 8,
    newton: int = 6,
) -> torch.Tensor:
    """Per-row precisions β_t (..., B, 1) giving ``exp H(P_t·) = perplexity``.

    Root finding in ``u = log β`` on distances scaled by each row's median: ``bisections``
    halvings of the bracket [−10, 10], then ``newton`` safeguarded Newton steps
    (``dH/du = −β² Var_P(d)``; a step that leaves the bracket is replaced by its midpoint).
    """
    admissible = (~excluded).sum(-1)
    if perplexity < 1 or perplexity >= float(admissible.min()):
        raise ValueError(
            f"perplexity must lie in [1, {int(admissible.min())}) for this batch, got {perplexity}"
        )
    scale = torch.nanmedian(sq_dist.masked_fill(excluded, math.nan), dim=-1, keepdim=True)
    scale = scale.values.clamp(min=1e-12)
    d = (sq_dist / scale).masked_fill(excluded, math.inf)
    d0 = d.masked_fill(excluded, 0.0)  # finite copy for the moments
    lo = torch.full_like(scale, -10.0)
    hi = torch.full_like(scale, 10.0)
    target = math.log(perplexity)
    u = (lo + hi) / 2
    for step in range(bisections + newton):
        beta = torch.exp(u)
        logp = torch.log_softmax(-beta * d, dim=-1)
        p = logp.exp()
        entropy = -(p * logp.masked_fill(excluded, 0.0)).sum(-1, keepdim=True)
        too_flat = entropy > target  # larger β sharpens the row
        lo = torch.where(too_flat, u, lo)
        hi = torch.where(too_flat, hi, u)
        mid = (lo + hi) / 2
        if step < bisections:
            u = mid
            continue
        mean = (p * d0).sum(-1, keepdim=True)
        var = ((p * d0 * d0).sum(-1, keepdim=True) - mean * mean).clamp(min=1e-30)
        jump = u + (entropy - target) / (beta * beta * var)
        inside = (jump >= lo) & (jump <= hi) & torch.isfinite(jump)
        u = torch.where(inside, jump, mid)
    return torch.exp(u) / scale


@torch.no_grad()
def knn_affinities(
    sq_dist: torch.Tensor, excluded: torch.Tensor, k: int, temperature: float = 1.0
) -> torch.Tensor:
    """Softmax of ``−d² / (T · d²_k)`` over each row's ``k`` nearest admissible points."""
    d = sq_dist.masked_fill(excluded, math.inf)
    k = min(int(k), int((~excluded).sum(-1).min()))
    if k < 1:
        raise ValueError("no admissible neighbours in the batch; lower the Theiler window")
    vals, idx = torch.topk(d, k, dim=-1, largest=False)
    radius = vals[..., -1:].clamp(min=1e-12)
    w = torch.softmax(-vals / (temperature * radius), dim=-1)
    return torch.zeros_like(d).scatter_(-1, idx, w)


def student_log_affinities(
    z: torch.Tensor,
    excluded: torch.Tensor,
    *,
    kernel: str = "student_t",
    temperature: float = 1.0,
    perplexity: float = 10.0,
) -> torch.Tensor:
    """``log Q`` of the student's latent points (B, m); excluded pairs get ``-inf``."""
    d = squared_distances(z)
    if kernel == "calibrated":
        logits = -calibrate_beta(d.detach(), excluded, perplexity) * d
    elif kernel == "gaussian":
        logits = -d / temperature
    elif kernel == "student_t":
        logits = -torch.log1p(d / temperature)
    else:
        raise ValueError(f"unknown kernel {kernel!r}; choose from {KERNELS}")
    return torch.log_softmax(logits.masked_fill(excluded, -math.inf), dim=-1)


def neighbourhood_kl(p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """``mean_t KL(P_t· ‖ Q_t·)``, zero-probability entries of P contributing nothing."""
    support = p > 0
    safe_p = torch.where(support, p, torch.ones_like(p))
    terms = torch.where(support, p * (torch.log(safe_p) - log_q), torch.zeros_like(p))
    return terms.sum(-1).mean()
