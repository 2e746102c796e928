"""The MER-DG loss: a per-modality entropy regulariser on each encoder's features.

For one modality's projected batch features ``z`` (N × D), following ``losses.py`` of
the official code (olivesgatech/MER-DG):

- variance floor (VICReg-style), ``L_marg(z) = mean_d ReLU(1 − sqrt(Var_batch(z_d) + 1e-4))``
  with the unbiased batch variance;
- spectral entropy (Gaussian entropy ∝ log det of the correlation),
  ``x = (z − mean) / (std + 1e-4)`` with the biased std, ``C = xᵀx / (N − 1) + 1e-4 I``,
  ``L_spec(z) = −logdet(C) / D``;
- ``L_MER(z) = α_marg L_marg(z) + α_spec L_spec(z)`` and, over modalities,
  ``λ_mer Σ_m L_MER(z_m)`` (λ_mer = 3, α_marg = α_spec = 1 in ``run_experiments.sh``).

Statistics are taken per modality and per batch: pooling modalities into one matrix
would let one modality's spread hide another's collapse.

With N ≤ D (the official batch 16 at D = 128) ``C`` has rank ≤ N − 1 and the 1e-4 ridge
is what keeps ``logdet`` finite; ``shrinkage > 0`` is this package's optional switch that
blends ``C`` with the identity (Ledoit–Wolf style, ``(1 − s) C + s I``) instead — off by
default, so the default loss is the official one.

References:
    Yarici & AlRegib, "MER-DG: Modality-Entropy Regularization for Multimodal Domain
    Generalization", ICML 2026, arXiv:2605.01967.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

__all__ = [
    "MERConfig",
    "check_features",
    "correlation_matrix",
    "mer_loss",
    "mer_penalty",
    "spectral_entropy_loss",
    "variance_floor_loss",
]

EPS = 1e-4


@dataclass(frozen=True)
class MERConfig:
    """Weights of the MER-DG loss (the official defaults)."""

    lambda_mer: float = 3.0
    alpha_marg: float = 1.0
    alpha_spec: float = 1.0
    eps: float = EPS
    shrinkage: float = 0.0  # 0: the official ridge only; (0, 1]: blend C with I

    def __post_init__(self) -> None:
        for name in ("lambda_mer", "alpha_marg", "alpha_spec"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.eps <= 0:
            raise ValueError(f"eps must be > 0, got {self.eps}")
        if not 0.0 <= self.shrinkage <= 1.0:
            raise ValueError(f"shrinkage must lie in [0, 1], got {self.shrinkage}")


def check_features(z: torch.Tensor, name: str = "z") -> None:
    """A 2-D floating batch of at least two rows with finite values, or a clear error."""
    if not isinstance(z, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(z).__name__}")
    if z.ndim < 2:
        raise ValueError(
            f"{name} must be 2-D (batch × features) or stacked (... × batch × features), "
            f"got shape {tuple(z.shape)}"
        )
    if not z.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got {z.dtype}")
    if z.shape[-2] < 2:
        raise ValueError(f"{name} needs at least 2 samples for batch statistics, got {z.shape[-2]}")
    if not torch.isfinite(z).all():
        raise ValueError(f"{name} has NaN or infinite values")


def variance_floor_loss(z: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """``mean_d ReLU(1 − sqrt(Var(z_d) + eps))`` (unbiased variance), the official
    ``marginal_entropy_loss``; identical to VICReg's variance term. Leading dimensions
    (independent stacked batches) give one value each."""
    check_features(z)
    return _variance_floor(z, eps)


def _variance_floor(z: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """:func:`variance_floor_loss` without the input checks (for the training loop, which
    checks the loss itself every step)."""
    # the unbiased variance from centred squares (Tensor.var over the batch axis of a
    # stacked batch is ~2× slower on CPU; same value up to rounding)
    n = z.shape[-2]
    var = (z - z.mean(dim=-2, keepdim=True)).square().sum(dim=-2) / (n - 1)
    std = torch.sqrt(var + eps)
    return F.relu(1.0 - std).mean(dim=-1)


def correlation_matrix(z: torch.Tensor, eps: float = EPS, shrinkage: float = 0.0) -> torch.Tensor:
    """The standardised feature correlation of the official spectral loss, with its ridge.

    ``x = (z − mean) / (std_biased + eps)``, ``C = xᵀx / (N − 1) + eps I``; with
    ``shrinkage = s > 0``, ``C ← (1 − s) C + s I`` (full rank for any N).
    """
    n, d = z.shape[-2:]
    x = z - z.mean(dim=-2, keepdim=True)
    std = x.square().mean(dim=-2, keepdim=True).sqrt() + eps  # the biased std
    x = x / std.clamp_min(eps)
    c = x.mT @ x / (n - 1)
    eye = torch.eye(d, device=z.device, dtype=z.dtype)
    c = c + eps * eye
    if shrinkage > 0:
        c = (1.0 - shrinkage) * c + shrinkage * eye
    return c


def spectral_entropy_loss(
    z: torch.Tensor, eps: float = EPS, shrinkage: float = 0.0
) -> torch.Tensor:
    """``−logdet(C) / D`` of :func:`correlation_matrix` (minimising it maximises the
    Gaussian entropy of the standardised features)."""
    check_features(z)
    return _spectral_entropy(z, eps, shrinkage)


def _spectral_entropy(z: torch.Tensor, eps: float = EPS, shrinkage: float = 0.0) -> torch.Tensor:
    """:func:`spectral_entropy_loss` without the input checks."""
    if z.shape[-1] < 2:
        return z.new_zeros(z.shape[:-2])
    c = correlation_matrix(z, eps=eps, shrinkage=shrinkage)
    _, logabsdet = torch.linalg.slogdet(c)
    return -logabsdet / z.shape[-1]


def mer_loss(z: torch.Tensor, config: MERConfig | None = None) -> torch.Tensor:
    """``α_marg L_marg(z) + α_spec L_spec(z)`` for ONE modality (unweighted by λ_mer)."""
    cfg = config or MERConfig()
    out = z.new_zeros(z.shape[:-2])
    if cfg.alpha_marg:
        out = out + cfg.alpha_marg * variance_floor_loss(z, cfg.eps)
    if cfg.alpha_spec:
        out = out + cfg.alpha_spec * spectral_entropy_loss(z, cfg.eps, cfg.shrinkage)
    return out


def mer_penalty(features: Sequence[torch.Tensor], config: MERConfig | None = None) -> torch.Tensor:
    """``λ_mer Σ_m L_MER(z_m)``: one term per modality, each with its own batch statistics.

    ``features`` holds one (N × D_m) tensor per modality (or per shared/specific half);
    every tensor must have the same N. Stacked (K × N × D_m) tensors of K independent
    models give one value per model.
    """
    cfg = config or MERConfig()
    if isinstance(features, torch.Tensor):
        raise TypeError(
            "features must be a sequence with one tensor per modality, not one tensor: "
            "statistics are per modality (pooling modalities defeats the regulariser)"
        )
    if len(features) == 0:
        raise ValueError("features must hold at least one modality's tensor")
    for m, z in enumerate(features):
        check_features(z, f"features[{m}]")
    sizes = {tuple(z.shape[:-1]) for z in features}
    if len(sizes) > 1:
        raise ValueError(f"every modality needs the same batch size, got {sorted(sizes)}")
    total = features[0].new_zeros(features[0].shape[:-2])
    for z in features:
        total = total + mer_loss(z, cfg)
    return cfg.lambda_mer * total
