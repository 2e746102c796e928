"""Per-example gradients of the logistic loss, two ways.

Every patch of example i enters the network linearly, so the per-example gradient of
ℓ_i = log(1 + exp(−y_i f(W, x_i))) with respect to the filter w_{j,r} is a combination of
that example's own patches:

∇_{w_{j,r}} ℓ_i = Σ_p a_{i,j,r,p} x_i⁽ᵖ⁾,
a_{i,j,r,p} = ℓ'_i · y_i · j · (q/m) · max(0, ⟨w_{j,r}, x_i⁽ᵖ⁾⟩)^{q−1},

with ℓ'_i = −sigmoid(−y_i f_i). The fused engine keeps only the coefficients a (n × 2m × P
numbers): the mean gradient, the per-example norms ‖∇ℓ_i‖² = Σ_{j,r} aᵀ K_i a with the
patch Gram matrix K_i = X_i X_iᵀ, and the clipped mean are contractions of a with the
data, never an (n, 2, m, d) tensor. :func:`per_sample_gradients_vmap` is the generic
reference, ``torch.func.vmap(torch.func.grad(ℓ))``; the two agree to rounding (tested).
"""

from __future__ import annotations

import torch
from torch.func import grad, vmap

from icml26.dpfeature.model import forward, logistic_loss, preactivations

__all__ = [
    "clipped_mean_gradient",
    "gram",
    "loss_coefficients",
    "mean_gradient",
    "per_sample_gradients",
    "per_sample_gradients_vmap",
    "per_sample_norms",
]


def _signs(w: torch.Tensor) -> torch.Tensor:
    return torch.tensor([1.0, -1.0], dtype=w.dtype, device=w.device)


def loss_coefficients(
    w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, q: float = 3.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The outputs f (..., n), the per-example losses (..., n) and the coefficients a
    (..., n, 2, m, P) of the per-example gradients in the example's own patches."""
    pre = preactivations(w, x)
    m = w.shape[-2]
    act = torch.relu(pre)
    out = act.pow(q).sum((-1, -2)) / m
    f = out[..., 0] - out[..., 1]
    margin = y * f
    dloss = -y * torch.sigmoid(-margin)  # ∂ℓ/∂f
    coef = dloss[..., None, None, None] * _signs(w)[:, None, None] * (q / m) * act.pow(q - 1)
    return logistic_loss(margin), coef


def gram(x: torch.Tensor) -> torch.Tensor:
    """K_i = X_i X_iᵀ, the patch Gram matrices (..., n, P, P)."""
    return torch.einsum("...npd,...nqd->...npq", x, x)


def mean_gradient(coef: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """∇L_S = (1/n) Σ_i ∇ℓ_i, shape (..., 2, m, d)."""
    return torch.einsum("...njrp,...npd->...jrd", coef, x) / x.shape[-3]


def per_sample_norms(coef: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """‖∇ℓ_i‖₂ over all filters, shape (..., n), from the coefficients and Gram matrices."""
    sq = torch.einsum("...njrp,...npq,...njrq->...n", coef, k, coef)
    return sq.clamp_min(0).sqrt()


def clipped_mean_gradient(
    coef: torch.Tensor, x: torch.Tensor, norms: torch.Tensor, clip: float
) -> torch.Tensor:
    """(1/n) Σ_i ∇ℓ_i · min(1, C/‖∇ℓ_i‖) (Abadi et al. 2016), shape (..., 2, m, d)."""
    scale = (clip / norms.clamp_min(1e-30)).clamp(max=1.0)
    return torch.einsum("...n,...njrp,...npd->...jrd", scale, coef, x) / x.shape[-3]


def per_sample_gradients(
    w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, q: float = 3.0
) -> torch.Tensor:
    """The per-example gradients as a tensor (..., n, 2, m, d), from the coefficients."""
    _, coef = loss_coefficients(w, x, y, q)
    return torch.einsum("...njrp,...npd->...njrd", coef, x)


def per_sample_gradients_vmap(
    w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, q: float = 3.0
) -> torch.Tensor:
    """The per-example gradients by ``vmap(grad(ℓ))`` over examples, shape (n, 2, m, d)
    for W (2, m, d), x (n, P, d), y (n,); leading batch axes are vmapped as well."""

    def loss_one(w1: torch.Tensor, x1: torch.Tensor, y1: torch.Tensor) -> torch.Tensor:
        return logistic_loss(y1 * forward(w1, x1[None], q)[0])

    per_example = vmap(grad(loss_one), in_dims=(None, 0, 0))
    fn = per_example
    for _ in range(w.ndim - 3):
        fn = vmap(fn, in_dims=(0, 0, 0))
    return fn(w, x, y)
