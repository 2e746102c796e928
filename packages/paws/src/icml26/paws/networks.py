"""The small networks every learner shares: an MLP, an encoder-only Transformer, the
observation normaliser and the optimiser.

**Observation normalisation** (:class:`ObsNorm`, switch ``normalize_obs`` in every
learner's config; off by default): a z-score (s − μ) / σ with μ and σ the per-dimension
mean and standard deviation of the observations the learner is trained on — the offline
data only, never evaluation rollouts — held as buffers of the trained network (so they
are saved with it) and applied in its forward pass, hence at evaluation too. A dimension
that is constant in the training data (σ < 1e-6) keeps σ = 1. Off, the module is skipped,
so the un-normalised path is bit-identical to releases without it. ``fit(..., eps=e)`` with
e > 0 divides by σ + e instead (no floor), as d3rlpy's ``StandardObservationScaler`` does
(e = 1e-3): a dimension whose spread is numerical jitter (σ ≈ 1e-6, e.g. Meta-World's
object quaternion) then stays near zero instead of becoming a unit-variance input.

**Optimiser** (:class:`Adam`): exactly ``torch.optim.Adam``'s single-tensor update
(optionally with AdamW's decoupled weight decay) for the tiny networks here, without the
``torch.optim`` wrappers whose per-step overhead dominates a 64-unit MLP's step on a CPU;
tested bit-identical to ``torch.optim.Adam`` and ``torch.optim.AdamW``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from torch import nn

__all__ = ["Adam", "ObsNorm", "SegmentTransformer", "default_device", "mlp"]

STD_FLOOR = 1e-6


def default_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` as given, else CUDA when present, else CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def mlp(n_in: int, n_out: int, hidden: tuple[int, ...] = (64, 64)) -> nn.Sequential:
    """Linear–ReLU stack."""
    layers: list[nn.Module] = []
    width = n_in
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, n_out))
    return nn.Sequential(*layers)


class SegmentTransformer(nn.Module):
    """Encoder-only Transformer over a segment's (s_t, a_t) tokens with learned positions;
    one output per token ([inferred]: per-token outputs, summed by the caller)."""

    def __init__(self, n_in: int, length: int, *, width: int = 32, heads: int = 2, layers: int = 1):
        super().__init__()
        self.embed = nn.Linear(n_in, width)
        self.position = nn.Parameter(torch.zeros(1, length, width))
        layer = nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, N, n_in) -> (B, N, 1)
        h = self.embed(x) + self.position[:, : x.shape[1]]
        return self.head(self.encoder(h))


class ObsNorm(nn.Module):
    """(obs − mean) / std over the last dimension once :meth:`fit` has set the statistics
    from training observations; the identity (skipped) before."""

    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(int(dim)))
        self.register_buffer("std", torch.ones(int(dim)))
        self.active = False

    @torch.no_grad()
    def fit(self, obs: np.ndarray | torch.Tensor, eps: float = 0.0) -> ObsNorm:
        """Set mean and std from training observations (…, dim) and switch on; ``eps`` > 0:
        divide by std + eps (d3rlpy's scaler) instead of flooring a constant dimension."""
        x = obs.detach().double().cpu().numpy() if torch.is_tensor(obs) else np.asarray(obs)
        x = x.reshape(-1, x.shape[-1]).astype(np.float64)
        if x.shape[-1] != self.mean.numel():
            raise ValueError(f"need observations with {self.mean.numel()} dims, got {x.shape[-1]}")
        if x.shape[0] == 0 or not np.all(np.isfinite(x)):
            raise ValueError("observation statistics need finite training observations")
        if not (np.isfinite(eps) and eps >= 0):
            raise ValueError(f"eps must be finite and non-negative, got {eps}")
        sd = x.std(axis=0)
        sd = sd + eps if eps > 0 else np.where(sd < STD_FLOOR, 1.0, sd)
        self.mean.copy_(torch.as_tensor(x.mean(axis=0)))
        self.std.copy_(torch.as_tensor(sd))
        self.active = True
        return self

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return (obs - self.mean) / self.std if self.active else obs

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        # loaded statistics switch the module on (identity statistics change nothing)
        self.active = bool(torch.any(self.mean != 0) or torch.any(self.std != 1))

    def extra_repr(self) -> str:
        return f"dim={self.mean.numel()}, active={self.active}"


class Adam:
    """``torch.optim.Adam`` (β = (0.9, 0.999), ε = 1e-8, no AMSGrad) with optional AdamW
    decoupled ``weight_decay``: the same single-tensor arithmetic in the same order, so the
    same parameters bit for bit, at less per-step overhead (module docstring)."""

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("Adam needs at least one trainable parameter")
        if not lr > 0 or weight_decay < 0:
            raise ValueError(f"need lr > 0 and weight_decay ≥ 0, got {lr}, {weight_decay}")
        self.lr, (self.beta1, self.beta2), self.eps = float(lr), betas, float(eps)
        self.weight_decay = float(weight_decay)
        self.exp_avg = [
            torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params
        ]
        self.exp_avg_sq = [
            torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params
        ]
        self.steps = [0] * len(self.params)

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        b1, b2, lr = self.beta1, self.beta2, self.lr
        for i, p in enumerate(self.params):
            grad = p.grad
            if grad is None:
                continue
            self.steps[i] += 1
            step = float(self.steps[i])
            if self.weight_decay:
                p.mul_(1 - lr * self.weight_decay)
            m, v = self.exp_avg[i], self.exp_avg_sq[i]
            m.lerp_(grad, 1 - b1)
            v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            step_size = lr / (1 - b1**step)
            denom = (v.sqrt() / (1 - b2**step) ** 0.5).add_(self.eps)
            p.addcdiv_(m, denom, value=-step_size)
