"""Diffusion spaces: Smoothie (distance latent), Gaussian embeddings and the TESS simplex.

One interface, :class:`DiffusionSpace`, covers the three spaces of the paper's ablation
(official code ``diffusion_holder.py``, ``utils.convert_to_simplex``,
``diffusion_utils/schedulers.py``). Every space maps clean tokens to a latent ``X0``,
noises it as ``X_t = μ_t X0 + std_t ε``, turns ``X_t`` into the network input and turns the
network's x0-prediction (an embedding ``ê``) back into a clean latent for the sampler.

- :class:`SmoothieSpace` — ``X0[j] = −‖e − E_j‖² / (2 σ_min²)`` (V-dimensional), the
  ``Arctan`` schedule, input ``softmax(X_t) @ E``.
- :class:`EmbeddingSpace` — Gaussian diffusion on the normalised embeddings themselves
  (``X0 = e``, the ``sd`` tangent schedule), input ``X_t``.
- :class:`SimplexSpace` — TESS: ``X0 = k (2·onehot − 1)``, cosine ``ᾱ``, ``std = k √(1 − ᾱ)``,
  the same input map as Smoothie; the predicted embedding is re-latented through its
  nearest token.

References:
    A. Shabalin, V. Meshchaninov, D. Vetrov. Smoothie: Smoothing Diffusion on Token
    Embeddings for Text Generation. arXiv:2505.18853, ICML 2026.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = [
    "ArctanSchedule",
    "CosineSDSchedule",
    "DiffusionSpace",
    "EmbeddingSpace",
    "SimplexSpace",
    "SmoothieSpace",
    "TessSchedule",
    "check_embeddings",
    "nearest_tokens",
    "pairwise_sq_distances",
]

T_MAX = 0.9995  # the official schedules clip t to [1 − T_MAX, T_MAX]


def check_embeddings(embeddings: Tensor, vocab_size: int | None = None) -> Tensor:
    """A 2-d finite float table, with ``vocab_size`` rows when given; else a clear error."""
    if not isinstance(embeddings, Tensor):
        raise TypeError(f"embeddings must be a torch.Tensor, got {type(embeddings).__name__}")
    if embeddings.ndim != 2:
        raise ValueError(f"embeddings must be (V, d), got shape {tuple(embeddings.shape)}")
    if vocab_size is not None and embeddings.shape[0] != vocab_size:
        raise ValueError(
            f"embedding matrix has {embeddings.shape[0]} rows but the vocabulary has "
            f"{vocab_size} tokens"
        )
    if not embeddings.is_floating_point():
        raise TypeError(f"embeddings must be a float tensor, got {embeddings.dtype}")
    if not torch.isfinite(embeddings).all():
        raise ValueError("embedding matrix contains NaN or infinite entries")
    return embeddings


def pairwise_sq_distances(x: Tensor, embeddings: Tensor, *, scale: float = 1.0) -> Tensor:
    """``scale · ‖x_i − E_j‖²`` for every row of ``x`` (``(..., d)``) and row of ``E`` (``(V, d)``).

    Computed as ``‖x‖² − 2 x·Eᵀ + ‖E‖²`` (official ``convert_to_simplex``): one fused
    ``addmm`` into the broadcast sum of the norms, so one ``(..., V)`` tensor is written and
    never the ``(..., V, d)`` difference tensor (nor the three temporaries of the plain
    expression). ``scale`` folds a constant factor (the latent's ``−1/(2σ²)``) into it.
    """
    flat = x.reshape(-1, x.shape[-1])
    x2 = (flat * flat).sum(-1, keepdim=True)
    e2 = (embeddings * embeddings).sum(-1)
    norms = x2 + e2 if scale == 1.0 else (x2 + e2).mul_(scale)
    out = norms.addmm_(flat, embeddings.T, alpha=-2.0 * scale)
    return out.view(*x.shape[:-1], embeddings.shape[0])


def nearest_tokens(pred: Tensor, embeddings: Tensor) -> Tensor:
    """Decoding: ``argmin_j ‖ê − E_j‖`` per position (official ``decode``)."""
    return pairwise_sq_distances(pred, embeddings).argmin(-1)


def _clip(t: Tensor) -> Tensor:
    return t.clamp(1 - T_MAX, T_MAX)


@dataclass(frozen=True)
class ArctanSchedule:
    """The official ``Arctan`` schedule (``diffusion_utils/schedulers.py``).

    ``σ̄(t) = (σ_max/σ_min − 1)·(2/π)·arctan(√(t/(1−t)) / d) + 1``, ``√α_t = σ̄(t)^{-2}``,
    ``std_t = δ √(1 − α_t)``; t is clipped to ``[5e-4, 0.9995]``. Defaults are the code's:
    ``d = 9``, ``σ_min = 1.5``, ``σ_max = 200``, ``δ = 1``.
    """

    coef_d: float = 9.0
    delta: float = 1.0
    sigma_min: float = 1.5
    sigma_max: float = 200.0

    def __post_init__(self) -> None:
        for name in ("coef_d", "delta", "sigma_min", "sigma_max"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        if self.sigma_min >= self.sigma_max:
            raise ValueError(
                f"sigma_min must be below sigma_max, got σ_min={self.sigma_min} ≥ "
                f"σ_max={self.sigma_max}"
            )

    def sigma_bar(self, t: Tensor) -> Tensor:
        t = _clip(t)
        mult = self.sigma_max / self.sigma_min - 1.0
        return mult * (2 / math.pi) * torch.atan(torch.sqrt(t / (1 - t)) / self.coef_d) + 1.0

    def params(self, t: Tensor) -> tuple[Tensor, Tensor]:
        """``(√α_t, std_t)`` shaped ``(B, 1, 1)`` for a batch of times ``(B,)``."""
        t = t.reshape(-1, 1, 1)
        alpha = self.sigma_bar(t) ** -4
        return alpha.sqrt(), self.delta * torch.sqrt(1 - alpha)

    @property
    def prior_std(self) -> float:
        return self.delta


@dataclass(frozen=True)
class CosineSDSchedule:
    """The official ``sd`` schedule for embedding diffusion: ``α = 1/√(1 + d² tan²(πt/2))``.

    Returns ``(α_t, √(1 − α_t²))`` (variance preserving); t clipped as in ``Arctan``.
    """

    coef_d: float = 9.0

    def __post_init__(self) -> None:
        if not self.coef_d > 0:
            raise ValueError(f"coef_d must be positive, got {self.coef_d!r}")

    def params(self, t: Tensor) -> tuple[Tensor, Tensor]:
        t = _clip(t.reshape(-1, 1, 1))
        tan = torch.tan(math.pi * t / 2)
        alpha = 1 / torch.sqrt(1 + tan**2 * self.coef_d**2)
        return alpha, torch.sqrt(1 - alpha**2)

    @property
    def prior_std(self) -> float:
        return 1.0


@dataclass(frozen=True)
class TessSchedule:
    """TESS's cosine ``ᾱ(t) = cos²((t + s)/(1 + s)·π/2) / cos²(s/(1 + s)·π/2)``, ``s = 1e-4``.

    ``(√ᾱ, k √(1 − ᾱ))`` with the simplex value ``k`` (official default 5).
    """

    simplex_value: float = 5.0

    def __post_init__(self) -> None:
        if not self.simplex_value > 0:
            raise ValueError(f"simplex_value must be positive, got {self.simplex_value!r}")

    def params(self, t: Tensor) -> tuple[Tensor, Tensor]:
        t = t.reshape(-1, 1, 1).clamp(0, 1)
        s = 1e-4

        def bar(x: Tensor) -> Tensor:
            return torch.cos((x + s) / (1 + s) * math.pi / 2) ** 2

        alpha = (bar(t) / bar(torch.zeros_like(t))).clamp(0, 1)
        return alpha.sqrt(), self.simplex_value * torch.sqrt(1 - alpha)

    @property
    def prior_std(self) -> float:
        return self.simplex_value


class DiffusionSpace(ABC):
    """Where diffusion happens; one network and one sampler serve every space."""

    name: str
    schedule: ArctanSchedule | CosineSDSchedule | TessSchedule

    @abstractmethod
    def latent_size(self, embeddings: Tensor) -> int:
        """Size of the last latent axis (V for Smoothie and the simplex, d for embeddings)."""

    @abstractmethod
    def clean(self, tokens: Tensor, embeddings: Tensor) -> Tensor:
        """The clean latent ``X0`` of token ids ``(B, L)``."""

    @abstractmethod
    def model_input(self, x_t: Tensor, embeddings: Tensor) -> Tensor:
        """The network's input ``(B, L, d)`` for a noisy latent."""

    @abstractmethod
    def relatent(self, pred: Tensor, embeddings: Tensor) -> Tensor:
        """The clean latent ``X̂0`` implied by the network's predicted embeddings."""

    def params(self, t: Tensor) -> tuple[Tensor, Tensor]:
        return self.schedule.params(t)

    def noise(self, x0: Tensor, t: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """``X_t = μ_t X0 + std_t ε`` (official ``DynamicSDE.marginal``)."""
        mu, std = self.params(t.to(x0.device))
        eps = torch.randn(x0.shape, generator=generator, device=x0.device, dtype=x0.dtype)
        return mu * x0 + std * eps

    def prior(
        self, shape: tuple[int, ...], *, generator: torch.Generator | None = None, device=None
    ) -> Tensor:
        """``X_T ~ N(0, s² I)`` with the schedule's prior scale (δ for Smoothie, k for TESS)."""
        return self.schedule.prior_std * torch.randn(shape, generator=generator, device=device)

    def decode(self, pred: Tensor, embeddings: Tensor) -> Tensor:
        return nearest_tokens(pred, embeddings)


class SmoothieSpace(DiffusionSpace):
    """Smoothing diffusion on token embeddings (the paper's space, Sec. 3; official
    ``--smooth_diffusion``).

    ``X0[j] = −‖e − E_j‖² / (2 σ_min²)``; the mean of ``X_t`` is
    ``−‖e − E_j‖² / (2 (σ_min σ̄(t))²)``, a Gaussian kernel over the vocabulary whose
    bandwidth grows from σ_min to σ_max, so mass spreads to semantically close tokens first.
    """

    name = "Smoothie"

    def __init__(self, schedule: ArctanSchedule | None = None):
        if schedule is not None and not isinstance(schedule, ArctanSchedule):
            raise TypeError(f"SmoothieSpace needs an ArctanSchedule, got {type(schedule)}")
        self.schedule = schedule or ArctanSchedule()

    @property
    def sigma_min(self) -> float:
        return self.schedule.sigma_min

    def latent_size(self, embeddings: Tensor) -> int:
        return embeddings.shape[0]

    def distance_latent(self, x: Tensor, embeddings: Tensor) -> Tensor:
        return pairwise_sq_distances(x, embeddings, scale=-0.5 / self.sigma_min**2)

    def clean(self, tokens: Tensor, embeddings: Tensor) -> Tensor:
        return self.distance_latent(embeddings[tokens], embeddings)

    def model_input(self, x_t: Tensor, embeddings: Tensor) -> Tensor:
        return torch.softmax(x_t, dim=-1) @ embeddings

    def relatent(self, pred: Tensor, embeddings: Tensor) -> Tensor:
        return self.distance_latent(pred, embeddings)


class EmbeddingSpace(DiffusionSpace):
    """Gaussian diffusion on the (normalised, frozen) token embeddings: ablation space (i)."""

    name = "embedding"

    def __init__(self, schedule: CosineSDSchedule | None = None):
        self.schedule = schedule or CosineSDSchedule()

    def latent_size(self, embeddings: Tensor) -> int:
        return embeddings.shape[1]

    def clean(self, tokens: Tensor, embeddings: Tensor) -> Tensor:
        return embeddings[tokens]

    def model_input(self, x_t: Tensor, embeddings: Tensor) -> Tensor:
        return x_t

    def relatent(self, pred: Tensor, embeddings: Tensor) -> Tensor:
        return pred


class SimplexSpace(DiffusionSpace):
    """TESS simplex diffusion (official ``--tess_diffusion``): ablation space (ii).

    ``X0 = k (2·onehot − 1)``; the sampler re-latents the predicted embedding through its
    nearest token (the official ``clamp`` path, the only one defined for TESS).
    """

    name = "simplex"

    def __init__(self, schedule: TessSchedule | None = None):
        self.schedule = schedule or TessSchedule()

    @property
    def k(self) -> float:
        return self.schedule.simplex_value

    def latent_size(self, embeddings: Tensor) -> int:
        return embeddings.shape[0]

    def simplex(self, tokens: Tensor, vocab_size: int) -> Tensor:
        onehot = torch.nn.functional.one_hot(tokens, vocab_size).float()
        return self.k * (2 * onehot - 1)

    def clean(self, tokens: Tensor, embeddings: Tensor) -> Tensor:
        return self.simplex(tokens, embeddings.shape[0]).to(embeddings.dtype)

    def model_input(self, x_t: Tensor, embeddings: Tensor) -> Tensor:
        return torch.softmax(x_t, dim=-1) @ embeddings

    def relatent(self, pred: Tensor, embeddings: Tensor) -> Tensor:
        return self.clean(nearest_tokens(pred, embeddings), embeddings)


SPACES = {"smoothie": SmoothieSpace, "embedding": EmbeddingSpace, "simplex": SimplexSpace}
