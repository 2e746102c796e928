"""The simplest strong learner: the class-mean linear classifier, private and not.

With shared weights over patches, v = (1/n) Σ_i y_i Σ_p x_i⁽ᵖ⁾ is the difference of the
class means of the patch sums, and the prediction is sign(Σ_p ⟨v, x⁽ᵖ⁾⟩). On the
multi-patch model v = μ + (1/n) Σ_i y_i ξ_i: a linear learner that averages the noise
away instead of fitting it, so it is the bar any CNN result should be read against.

The private version releases v once through the Gaussian mechanism: every
u_i = y_i Σ_p x_i⁽ᵖ⁾ is clipped to norm R (R = σ_p √(d (P − 1)) by default, the typical
norm of the noise patches, a public parameter of the model, never read off the data),
and v = (1/n)(Σ_i clip_R(u_i) + N(0, z² R² I)) with z calibrated for one step at (ε, δ).
The GD/NoisyGD/DP-GD trainers themselves are in :mod:`icml26.dpfeature.train`.
"""

from __future__ import annotations

import math

import torch

from icml26.dpfeature.accounting import noise_multiplier
from icml26.dpfeature.data import check_labels

__all__ = ["class_mean", "class_mean_error", "private_class_mean"]


def _check(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if x.ndim < 3:
        raise ValueError(f"x must be (..., n, P, d), got {tuple(x.shape)}")
    y = check_labels(y)
    if y.shape != x.shape[:-2]:
        raise ValueError(f"y {tuple(y.shape)} does not match x {tuple(x.shape)}")
    return x, y.to(x.dtype)


def class_mean(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """v = (1/n) Σ_i y_i Σ_p x_i⁽ᵖ⁾, shape (..., d)."""
    x, y = _check(x, y)
    return torch.einsum("...n,...nd->...d", y, x.sum(-2)) / x.shape[-3]


def private_class_mean(
    x: torch.Tensor,
    y: torch.Tensor,
    epsilon: float,
    delta: float,
    *,
    clip: float | None = None,
    sigma_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The class-mean direction released once by the Gaussian mechanism ((ε, δ)-DP)."""
    x, y = _check(x, y)
    n, patches, d = x.shape[-3:]
    radius = clip if clip is not None else sigma_p * math.sqrt(d * (patches - 1))
    if not radius > 0:
        raise ValueError(f"clip radius must be positive, got {radius}")
    z = noise_multiplier(epsilon, delta, 1)
    u = y[..., None] * x.sum(-2)
    u = u * (radius / u.norm(dim=-1, keepdim=True).clamp_min(1e-30)).clamp(max=1.0)
    noise = torch.randn((*u.shape[:-2], d), generator=generator, dtype=x.dtype)
    return (u.sum(-2) + z * radius * noise.to(x.device)) / n


def class_mean_error(v: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Test error of sign(Σ_p ⟨v, x⁽ᵖ⁾⟩) (ties count as errors), shape (...)."""
    x, y = _check(x, y)
    score = torch.einsum("...d,...nd->...n", v, x.sum(-2))
    return ((y * score) <= 0).to(x.dtype).mean(-1)
