"""Semantic Exploration Energy (SEE) — reconstructed.

The public reviews of CURE name the term (it keeps prototypes "softly connected"
against the orthogonality that cross-entropy drives, "prototype fragmentation") but not
its formula. Reconstruction:

    E_SEE(μ) = −(τ_e / K) Σ_i log Σ_{j≠i} exp(cos(μ_i, μ_j) / τ_e),   τ_e = 0.5,

a soft maximum of each prototype's similarity to its relatives; minimising it raises
each prototype's similarity to its nearest relatives while cross-entropy still separates
classes. The sample-level variant the reviews hint at is −τ log Σ_{k≠y} exp(s_k/τ) over
the non-target logits. Because SEE can shrink the prototype space, :func:`see_term`
switches it off while the mean off-diagonal cosine is at or above a cap (0.5) and
pushes the prototypes back below it.
"""

from __future__ import annotations

import torch

__all__ = ["mean_offdiagonal_cosine", "prototype_energy", "sample_energy", "see_term"]


def _check_prototypes(mu: torch.Tensor) -> None:
    if not isinstance(mu, torch.Tensor):
        raise TypeError(f"prototypes must be a torch.Tensor, got {type(mu).__name__}")
    if mu.ndim != 2 or mu.shape[0] < 2:
        raise ValueError(f"need a (K >= 2, dim) prototype matrix, got shape {tuple(mu.shape)}")


def _cosines(mu: torch.Tensor) -> torch.Tensor:
    unit = torch.nn.functional.normalize(mu, dim=-1)
    return unit @ unit.T


def prototype_energy(mu: torch.Tensor, tau_e: float = 0.5) -> torch.Tensor:
    """E_SEE(μ) = −(τ_e/K) Σ_i logsumexp_{j≠i} cos(μ_i, μ_j)/τ_e (reconstructed)."""
    _check_prototypes(mu)
    if tau_e <= 0:
        raise ValueError(f"tau_e must be positive, got {tau_e}")
    k = mu.shape[0]
    c = _cosines(mu) / tau_e
    c = c.masked_fill(torch.eye(k, dtype=torch.bool, device=mu.device), float("-inf"))
    return -tau_e * torch.logsumexp(c, dim=1).mean()


def sample_energy(logits: torch.Tensor, targets: torch.Tensor, tau: float = 0.1) -> torch.Tensor:
    """Sample-level variant (reconstructed): mean of −τ log Σ_{k≠y} exp(s_k/τ).

    ``logits`` are the cosine logits s = z·μ/τ_logit; τ here is the energy temperature.
    """
    if logits.ndim != 2 or targets.shape != (logits.shape[0],):
        raise ValueError(
            f"logits (n, K) and targets (n,) expected, got {logits.shape}, {targets.shape}"
        )
    masked = logits.scatter(1, targets.view(-1, 1), float("-inf"))
    return -tau * torch.logsumexp(masked / tau, dim=1).mean()


def mean_offdiagonal_cosine(mu: torch.Tensor) -> float:
    """Mean cos(μ_i, μ_j) over i ≠ j."""
    _check_prototypes(mu)
    k = mu.shape[0]
    c = _cosines(mu.detach())
    return float((c.sum() - c.diagonal().sum()) / (k * (k - 1)))


def see_term(
    mu: torch.Tensor,
    weight: float,
    *,
    tau_e: float = 0.5,
    cap: float = 0.5,
    restoring: float = 10.0,
) -> tuple[torch.Tensor, bool]:
    """λ_see · E_SEE(μ) below the cap; above it a restoring term instead.

    While the mean off-diagonal cosine m is ≥ ``cap`` the energy is off and the term is
    λ_see · ``restoring`` · (m − cap), which pushes the prototypes back apart (a mere
    switch-off would let an optimiser's momentum carry them past the cap). Returns the
    term and whether the energy was active.
    """
    if weight < 0:
        raise ValueError(f"the SEE weight must be non-negative, got {weight}")
    if not -1.0 <= cap <= 1.0:
        raise ValueError(f"cap must be a cosine in [-1, 1], got {cap}")
    if weight == 0:
        return mu.sum() * 0.0, False
    k = mu.shape[0]
    _check_prototypes(mu)
    c = _cosines(mu)
    mean = (c.sum() - c.diagonal().sum()) / (k * (k - 1))
    if float(mean.detach()) >= cap:
        return weight * restoring * (mean - cap), False
    return weight * prototype_energy(mu, tau_e), True
