"""The two-layer CNN with polynomial ReLU (reconstructed from Cao et al. 2022, Eq. 2.1).

f(W, x) = F₊₁(W₊₁, x) − F₋₁(W₋₁, x),
F_j(W_j, x) = (1/m) Σ_{r=1..m} Σ_{p=1..P} σ(⟨w_{j,r}, x⁽ᵖ⁾⟩),   σ(z) = max(0, z)^q, q > 2.

The filters w_{j,r} ∈ R^d are shared across patches; the second layer is fixed at
±1/m and is never a parameter (it cannot change). Weights are one tensor ``W`` of shape
(..., 2, m, d): index 0 is the class j = +1, index 1 the class j = −1, and any leading
axes are a batch of independent networks (settings × seeds) trained side by side.
w_{j,r}⁽⁰⁾ ~ N(0, σ₀² I).

:class:`TwoLayerCNN` is the same network as an ``nn.Module`` built from one bias-free
``nn.Linear`` (so that opacus can wrap it); :func:`forward` is the functional form the
trainers use.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["CLASS_SIGNS", "TwoLayerCNN", "check_q", "forward", "init_weights", "logistic_loss"]

# the fixed second layer: +1 for the filters of class +1, −1 for those of class −1
CLASS_SIGNS = (1.0, -1.0)


def check_q(q: float) -> float:
    """The power of the polynomial ReLU; the theory needs q > 2."""
    if isinstance(q, bool) or not isinstance(q, int | float):
        raise TypeError(f"q must be a number, got {type(q).__name__}")
    if not math.isfinite(q) or q <= 2:
        raise ValueError(f"q must be > 2 (polynomial ReLU of the theory), got {q}")
    return float(q)


def init_weights(
    m: int,
    d: int,
    sigma0: float,
    *,
    batch: tuple[int, ...] = (),
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """W⁽⁰⁾ of shape (*batch, 2, m, d) with entries N(0, σ₀²)."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"m (filters per class) must be a positive int, got {m!r}")
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be a positive int, got {d!r}")
    if not (isinstance(sigma0, int | float) and math.isfinite(sigma0) and sigma0 >= 0):
        raise ValueError(f"sigma0 must be a non-negative number, got {sigma0!r}")
    w = torch.randn(*batch, 2, m, d, generator=generator, dtype=dtype)
    return (sigma0 * w).to(device) if device is not None else sigma0 * w


def preactivations(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """⟨w_{j,r}, x_i⁽ᵖ⁾⟩ of shape (..., n, 2, m, P) for W (..., 2, m, d), x (..., n, P, d)."""
    return torch.einsum("...jrd,...npd->...njrp", w, x)


def forward(w: torch.Tensor, x: torch.Tensor, q: float = 3.0) -> torch.Tensor:
    """f(W, x) of shape (..., n) for W (..., 2, m, d) and x (..., n, P, d)."""
    if w.shape[-3] != 2:
        raise ValueError(f"W must have shape (..., 2, m, d), got {tuple(w.shape)}")
    if x.shape[-1] != w.shape[-1]:
        raise ValueError(f"patch dimension {x.shape[-1]} differs from the filters' {w.shape[-1]}")
    m = w.shape[-2]
    act = torch.relu(preactivations(w, x)).pow(q).sum((-1, -2)) / m  # F_j: (..., n, 2)
    return act[..., 0] - act[..., 1]


def logistic_loss(margin: torch.Tensor) -> torch.Tensor:
    """ℓ(z) = log(1 + e^{−z}) at z = y·f, computed stably."""
    return torch.nn.functional.softplus(-margin)


class TwoLayerCNN(nn.Module):
    """The network as a module: one ``nn.Linear(d, 2m, bias=False)`` over the patches.

    ``weight`` rows 0..m−1 are the filters of class +1, rows m..2m−1 those of class −1;
    the fixed second layer ``signs`` is a buffer, not a parameter.
    """

    def __init__(self, d: int, m: int, q: float = 3.0):
        super().__init__()
        self.q, self.m = check_q(q), int(m)
        self.filters = nn.Linear(d, 2 * m, bias=False)
        signs = torch.cat([torch.full((m,), 1.0 / m), torch.full((m,), -1.0 / m)])
        self.register_buffer("signs", signs)

    @classmethod
    def from_weights(cls, w: torch.Tensor, q: float = 3.0) -> TwoLayerCNN:
        """A module holding a copy of W (2, m, d)."""
        if w.ndim != 3 or w.shape[0] != 2:
            raise ValueError(f"W must have shape (2, m, d), got {tuple(w.shape)}")
        net = cls(int(w.shape[2]), int(w.shape[1]), q).to(w.dtype)
        with torch.no_grad():
            net.filters.weight.copy_(w.reshape(-1, w.shape[2]))
        return net

    def weights(self) -> torch.Tensor:
        """W as (2, m, d)."""
        return self.filters.weight.detach().reshape(2, self.m, -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x (n, P, d) → f (n,)
        act = torch.relu(self.filters(x)).pow(self.q)  # (n, P, 2m)
        return act.sum(1) @ self.signs
