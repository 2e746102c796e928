"""Health prototype by optimal-transport selective matching (DITING, step 2).

From the authors' pseudocode: the first K embedded cycles are mapped to spectral probability
measures μ_i, pairwise Sinkhorn OT distances D_ij give the Wasserstein medoid
``i* = argmin_i Σ_j D_ij``, the weights ``w_i = softmax_i(-D_{i,i*} / τ)`` build the prototype
``H = Σ_i w_i x_i``, and the residual is ``R = X - H`` for all cycles.

Reconstructed (withheld by the authors): μ_i is the normalised power spectrum |FFT(x_i)|² over
the frequency bins (optionally pooled to ``n_bins``), the ground cost is ``|f_a - f_b|²`` on
frequencies scaled to [0, 1], the Sinkhorn solver is log-domain with entropic ε, τ and ε are
constants (τ optionally learnable, and measured in units of the mean observed distance to
the medoid, ``relative=True``), and the distances are debiased Sinkhorn divergences
``OT_ij - (OT_ii + OT_jj) / 2`` (``debias=True``): the entropic cost of two identical
measures is not zero, and on these nearly identical spectra that bias hid the anomalies.
H uses only the ``min(i, K)`` observed cycles of a window, R is zero on masked cycles, and
``detach=True`` stops gradients through H.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch
from torch import nn

__all__ = [
    "HealthPrototype",
    "PrototypeOutput",
    "SinkhornResult",
    "ground_cost",
    "sinkhorn_log",
    "spectral_measures",
]


def spectral_measures(
    x: torch.Tensor, n_bins: int | None = None, eps: float = 1e-8
) -> torch.Tensor:
    """``[..., D] -> [..., F]``: normalised power spectrum |rfft(x)|² (reconstructed map).

    ``n_bins`` pools adjacent frequency bins (sums of power) to at most that many.
    """
    power = torch.fft.rfft(x, dim=-1).abs() ** 2
    if n_bins is not None and n_bins < power.shape[-1]:
        F = power.shape[-1]
        edges = torch.linspace(0, F, n_bins + 1).round().long()
        power = torch.stack(
            [power[..., int(a) : int(b)].sum(-1) for a, b in itertools.pairwise(edges.tolist())],
            dim=-1,
        )
    power = power + eps
    return power / power.sum(-1, keepdim=True)


def ground_cost(n: int, *, device=None, dtype=torch.float32) -> torch.Tensor:
    """``|f_a - f_b|²`` on n frequencies scaled to [0, 1]."""
    f = torch.linspace(0.0, 1.0, n, device=device, dtype=dtype)
    return (f[:, None] - f[None, :]) ** 2


@dataclass
class SinkhornResult:
    cost: torch.Tensor  # [...] <P, M> of the entropic plan (POT's sinkhorn2 value)
    marginal_error: torch.Tensor  # [...] max |P 1 - a| after the last iteration
    converged: torch.Tensor  # [...] bool
    iterations: int


def sinkhorn_log(
    a: torch.Tensor,
    b: torch.Tensor,
    M: torch.Tensor,
    *,
    reg: float = 0.05,
    max_iter: int = 200,
    tol: float = 1e-6,
    check_every: int = 10,
    gradient: str = "last",
) -> SinkhornResult:
    """Batched log-domain Sinkhorn: ``a [..., n]``, ``b [..., m]``, ``M [n, m]`` (or batched).

    Returns the transport cost ``<P, M>`` of the entropic plan, which is what
    ``ot.sinkhorn2(a, b, M, reg, method="sinkhorn_log")`` returns; stops when the row
    marginal error falls below ``tol`` and reports per problem whether it did.

    ``gradient="last"`` (reconstructed, for speed) runs the iterations without autograd and
    differentiates one final update of both potentials (a one-step implicit gradient);
    ``"unrolled"`` differentiates through every iteration.
    """
    if gradient not in ("last", "unrolled"):
        raise ValueError(f"gradient must be 'last' or 'unrolled', got {gradient!r}")
    if reg <= 0:
        raise ValueError(f"Sinkhorn reg (ε) must be > 0, got {reg}")
    log_a, log_b = a.clamp_min(1e-300).log(), b.clamp_min(1e-300).log()
    K = -M / reg
    f = torch.zeros_like(a)
    g = torch.zeros_like(b)
    err = torch.full(a.shape[:-1], float("inf"), device=a.device, dtype=a.dtype)
    it = 0

    shared = M.ndim == 2
    # a shared ground cost lets the log-sum-exp run as a matrix product with a max shift
    # (stable while exp(-M/ε) stays above float underflow); otherwise the exact form
    fast = shared and float(M.max()) / reg < 0.5 * -math.log(torch.finfo(a.dtype).tiny)
    kernel = torch.exp(K) if fast else None

    def lse_rows(g, K):  # LSE_j(K_ij + g_j/ε)
        if fast:
            s = g / reg
            top = s.amax(-1, keepdim=True)
            return top + torch.log((s - top).exp() @ kernel.T)
        return torch.logsumexp(K + g.unsqueeze(-2) / reg, dim=-1)

    def lse_cols(f, K):  # LSE_i(K_ij + f_i/ε)
        if fast:
            s = f / reg
            top = s.amax(-1, keepdim=True)
            return top + torch.log((s - top).exp() @ kernel)
        return torch.logsumexp(K + f.unsqueeze(-1) / reg, dim=-2)

    def step(f, g, K, log_a, log_b):
        # f = ε log a - ε LSE_j((g_j - M_ij)/ε);  g likewise on columns
        f = reg * (log_a - lse_rows(g, K))
        g = reg * (log_b - lse_cols(f, K))
        return f, g

    with torch.no_grad() if gradient == "last" else torch.enable_grad():
        Kc, la, lb = (
            (K, log_a, log_b)
            if gradient == "unrolled"
            else (K.detach(), log_a.detach(), log_b.detach())
        )
        for it in range(1, max_iter + 1):
            f, g = step(f, g, Kc, la, lb)
            if it % check_every == 0 or it == max_iter:
                with torch.no_grad():
                    err = ((f / reg + lse_rows(g, Kc)).exp() - a).abs().amax(-1)
                if bool((err < tol).all()):
                    break
    if gradient == "last":
        f, g = step(f.detach(), g.detach(), K, log_a, log_b)
    if fast:  # <P, M> = Σ_ij exp(f_i/ε) (e^{-M/ε} ∘ M)_ij exp(g_j/ε), shifted
        sf, sg = f / reg, g / reg
        tf, tg = sf.amax(-1, keepdim=True), sg.amax(-1, keepdim=True)
        inner = ((sg - tg).exp() @ (kernel * M).T) * (sf - tf).exp()
        cost = inner.sum(-1) * (tf + tg).squeeze(-1).exp()
    else:
        logP = K + f.unsqueeze(-1) / reg + g.unsqueeze(-2) / reg
        cost = (logP.exp() * M).sum((-2, -1))
    return SinkhornResult(cost, err, err < tol, it)


@dataclass
class PrototypeOutput:
    prototype: torch.Tensor  # H [B, D]
    residual: torch.Tensor  # R [B, T, D], zero on masked cycles
    weights: torch.Tensor  # w [B, K] (zero on unobserved prototype cycles)
    medoid: torch.Tensor  # i* [B]
    distances: torch.Tensor | None  # D [B, K, K]
    converged: torch.Tensor  # [B] every Sinkhorn problem of the sample converged


class HealthPrototype(nn.Module):
    """OT-medoid health prototype of the first K observed cycles (``kind="medoid"``), or their
    plain mean (``kind="mean"``, the ablation)."""

    def __init__(
        self,
        K: int = 8,
        *,
        kind: str = "medoid",
        tau: float = 0.2,
        learn_tau: bool = False,
        reg: float = 0.05,
        n_bins: int | None = 32,
        max_iter: int = 100,
        tol: float = 1e-5,
        detach: bool = False,
        relative: bool = True,
        debias: bool = True,
    ):
        super().__init__()
        if kind not in ("medoid", "mean"):
            raise ValueError(f"prototype kind must be 'medoid' or 'mean', got {kind!r}")
        if K < 1:
            raise ValueError(f"K (diting_prototype_cycles) must be >= 1, got {K}")
        if tau <= 0:
            raise ValueError(f"τ must be > 0, got {tau}")
        self.K, self.kind, self.reg, self.n_bins = K, kind, reg, n_bins
        self.max_iter, self.tol, self.detach, self.relative = max_iter, tol, detach, relative
        self.debias = debias
        log_tau = torch.tensor(math.log(tau))
        if learn_tau:
            self.log_tau = nn.Parameter(log_tau)
        else:
            self.register_buffer("log_tau", log_tau)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> PrototypeOutput:
        """``x [B, T, D]`` embedded cycles, ``mask [B, T]`` (1 = observed, a prefix)."""
        B, T, _ = x.shape
        K = min(self.K, T)
        m = mask[:, :K]  # [B, K] observed prototype cycles: the first min(i, K)
        if bool((m.sum(1) < 1).any()):
            raise ValueError("every window needs at least one observed cycle")
        xk = x[:, :K]
        ctx = torch.no_grad() if self.detach else torch.enable_grad()
        with ctx:
            if self.kind == "mean":
                w = m / m.sum(1, keepdim=True)
                medoid = torch.zeros(B, dtype=torch.long, device=x.device)
                dist, converged = None, torch.ones(B, dtype=torch.bool, device=x.device)
            else:
                mu = spectral_measures(xk, self.n_bins)  # [B, K, F]
                M = ground_cost(mu.shape[-1], device=x.device, dtype=mu.dtype)
                a = mu.unsqueeze(2).expand(B, K, K, -1)
                b = mu.unsqueeze(1).expand(B, K, K, -1)
                res = sinkhorn_log(a, b, M, reg=self.reg, max_iter=self.max_iter, tol=self.tol)
                dist = 0.5 * (res.cost + res.cost.transpose(1, 2))  # symmetrise solver error
                if self.debias:  # Sinkhorn divergence: OT_ij - (OT_ii + OT_jj) / 2
                    diag = torch.diagonal(dist, dim1=1, dim2=2)
                    dist = (dist - 0.5 * (diag.unsqueeze(2) + diag.unsqueeze(1))).clamp_min(0)
                pair = m.unsqueeze(2) * m.unsqueeze(1)
                converged = (res.converged | (pair == 0)).all(-1).all(-1)
                big = torch.finfo(dist.dtype).max / 4
                total = (dist * pair).sum(-1).masked_fill(m == 0, big)
                medoid = total.argmin(-1)  # not differentiable; the weights are
                d_star = dist.gather(1, medoid.view(B, 1, 1).expand(B, 1, K)).squeeze(1)
                if self.relative:  # reconstructed: τ in units of the mean observed distance
                    scale = (d_star * m).sum(1, keepdim=True) / m.sum(1, keepdim=True).clamp_min(1)
                    d_star = d_star / scale.clamp_min(1e-12)
                logits = (-d_star / self.log_tau.exp()).masked_fill(m == 0, float("-inf"))
                w = torch.softmax(logits, dim=-1)
            H = (w.unsqueeze(-1) * xk).sum(1)  # [B, D]
        if self.detach:
            H = H.detach()
        R = (x - H.unsqueeze(1)) * mask.unsqueeze(-1)
        return PrototypeOutput(H, R, w, medoid, dist, converged)
