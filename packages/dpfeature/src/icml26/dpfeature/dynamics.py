"""Signal learning and noise memorisation: the weight decomposition.

Cao et al. (2022, Definition 5.1), which this paper builds on (reconstructed, text unread):

w_{j,r} = w_{j,r}⁽⁰⁾ + j · γ_{j,r} · μ/‖μ‖² + Σ_i ρ_{j,r,i} · ξ_i/‖ξ_i‖² + residual.

Full-batch GD moves every filter inside span{μ, ξ_1, …, ξ_n} (each gradient is a
combination of the patches), so there the residual is zero. The DP noise of NoisyGD and
DP-GD is isotropic and leaves a residual outside that span; it is reported, not hidden.
Because every ξ_i ⊥ μ, γ_{j,r} = j ⟨w_{j,r} − w⁽⁰⁾, μ⟩; the ρ solve the Gram system
⟨w − w⁽⁰⁾, ξ_k⟩ = Σ_i ρ_i ⟨ξ_i, ξ_k⟩ / ‖ξ_i‖².

Signal learning is max_{j,r} γ_{j,r}; noise memorisation is max_{j,r,i: y_i = j} ρ_{j,r,i}
(Cao's ρ̄, the coefficients that help fit example i); their ratio says which won.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Decomposer", "Decomposition", "decompose"]


@dataclass(frozen=True)
class Decomposition:
    """γ (..., 2, m), ρ (..., 2, m, N) over the N noise patches, and the residual
    (..., 2, m, d) of W − W⁽⁰⁾ outside span{μ, ξ}."""

    gamma: torch.Tensor
    rho: torch.Tensor
    residual: torch.Tensor
    own_class: torch.Tensor  # (..., 2, N): True where the noise patch's label is j

    @property
    def signal(self) -> torch.Tensor:
        """max_{j,r} γ_{j,r}, shape (...)."""
        return self.gamma.amax((-1, -2))

    @property
    def memorisation(self) -> torch.Tensor:
        """max_{j,r,i: y_i = j} ρ_{j,r,i}, shape (...)."""
        own = self.own_class[..., :, None, :].expand_as(self.rho)
        return torch.where(own, self.rho, torch.full_like(self.rho, -torch.inf)).amax((-1, -2, -3))

    @property
    def ratio(self) -> torch.Tensor:
        """max ρ̄ / max γ (denominator floored at 1e-12)."""
        return self.memorisation / self.signal.clamp_min(1e-12)


class Decomposer:
    """Precomputes the Gram factorisation of the noise patches of one dataset (batched).

    ``mu`` (..., d), ``noise`` (..., n, P − 1, d), ``y`` (..., n).
    """

    def __init__(self, mu: torch.Tensor, noise: torch.Tensor, y: torch.Tensor):
        if noise.ndim < 3:
            raise ValueError(f"noise must be (..., n, P - 1, d), got {tuple(noise.shape)}")
        self.mu = mu
        self.xi = noise.flatten(-3, -2)  # (..., N, d) with N = n (P − 1)
        self.labels = y[..., :, None].expand(noise.shape[:-1]).flatten(-2)  # (..., N)
        gram = self.xi @ self.xi.transpose(-1, -2)
        self.chol = torch.linalg.cholesky(gram.double())
        self.sq_norms = self.xi.pow(2).sum(-1)  # ‖ξ_i‖²
        signs = torch.tensor([1.0, -1.0], dtype=y.dtype, device=y.device)
        self.signs = signs
        self.own = self.labels[..., None, :] == signs[:, None]  # (..., 2, N)

    def coefficients(self, w: torch.Tensor, w0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """γ (..., 2, m) and ρ (..., 2, m, N) without the residual (cheap: for tracking)."""
        dw = w - w0
        gamma = torch.einsum("...jrd,...d->...jr", dw, self.mu) * self.signs[:, None]
        c = torch.einsum("...jrd,...nd->...jrn", dw, self.xi)
        # ρ = D (Ξ Ξᵀ)⁻¹ c, D = diag ‖ξ_i‖²
        sol = torch.cholesky_solve(
            c.double().flatten(-3, -2).transpose(-1, -2), self.chol
        ).transpose(-1, -2)
        rho = sol.reshape(c.shape).to(w.dtype) * self.sq_norms[..., None, None, :]
        return gamma, rho

    def __call__(self, w: torch.Tensor, w0: torch.Tensor) -> Decomposition:
        gamma, rho = self.coefficients(w, w0)
        mu_sq = self.mu.pow(2).sum(-1)[..., None, None, None]
        span = (gamma * self.signs[:, None])[..., None] * self.mu[..., None, None, :] / mu_sq
        span = span + torch.einsum(
            "...jrn,...nd->...jrd", rho / self.sq_norms[..., None, None, :], self.xi
        )
        return Decomposition(gamma, rho, (w - w0) - span, self.own)


def decompose(
    w: torch.Tensor, w0: torch.Tensor, mu: torch.Tensor, noise: torch.Tensor, y: torch.Tensor
) -> Decomposition:
    """The decomposition of W (..., 2, m, d) against its initialisation W⁽⁰⁾."""
    return Decomposer(mu, noise, y)(w, w0)
