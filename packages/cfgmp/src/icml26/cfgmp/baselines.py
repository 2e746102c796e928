"""Guidance rules the paper's method is compared with.

A guidance rule turns the conditional and unconditional velocities at one point into
the velocity the solver uses. Each rule has

- ``mode(step, t)``: ``"both"`` (evaluate v_c and v_u, 2 NFEs), ``"cond"`` (v_c only,
  1 NFE) or ``"zero"`` (no evaluation, velocity 0);
- ``init_state()`` and ``combine(v_c, v_u, x, t, state) -> (v, state)``.

Rules here:

- :class:`CFG` — classifier-free guidance ``v_u + w·(v_c − v_u)`` (Ho & Salimans, 2022).
- :class:`CFGZeroStar` — CFG-Zero* (Fan et al., 2025, arXiv 2503.18886): optimised
  scale ``s* = ⟨v_c, v_u⟩/‖v_u‖²`` per sample, ``v = s*·v_u + w·(v_c − s*·v_u)``, and
  zero velocity for the first ``zero_init_steps`` steps (as ``diffusers``'
  ``ClassifierFreeZeroStarGuidance``).
- :class:`APG` — adaptive projected guidance (Sadat et al., 2024, arXiv 2410.02416),
  applied, as in that paper, to the data prediction ``D = x + (1 − t)·v``:
  ``Δ = D_c − D_u``, reverse momentum ``Δ ← Δ + β·Δ_prev``, rescaling to norm ≤ r,
  split into the parts parallel and orthogonal to ``D_c``, and
  ``D = D_c + (w − 1)·(Δ_⊥ + η·Δ_∥)``.
- :class:`GuidanceInterval` — CFG applied only for ``t`` in ``[start, stop)``, the
  conditional velocity elsewhere (Kynkäänniemi et al., 2024, arXiv 2404.07724).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

__all__ = ["APG", "CFG", "CFGZeroStar", "GuidanceInterval", "Mode"]

Mode = Literal["zero", "cond", "both"]


def _check_scale(scale: float) -> None:
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale):
        raise ValueError(f"guidance scale must be a finite number, got {scale!r}")
    if scale < 0:
        warnings.warn(
            f"guidance scale {scale} < 0 guides away from the condition "
            "(w = 0 is unconditional, w = 1 conditional sampling)",
            UserWarning,
            stacklevel=4,
        )


def _flat_dot(a: Tensor, b: Tensor) -> Tensor:
    """Per-sample inner product, shaped to broadcast against (B, ...)."""
    d = (a.reshape(a.shape[0], -1) * b.reshape(b.shape[0], -1)).sum(1)
    return d.reshape(a.shape[0], *([1] * (a.ndim - 1)))


@dataclass(frozen=True)
class CFG:
    """Classifier-free guidance: ``v = v_u + w·(v_c − v_u)``."""

    scale: float

    def __post_init__(self) -> None:
        _check_scale(self.scale)

    def mode(self, step: int, t: float) -> Mode:
        return "both"

    def init_state(self) -> Any:
        return None

    def combine(self, v_c: Tensor, v_u: Tensor, x: Tensor, t: float, state: Any):
        return v_u + self.scale * (v_c - v_u), state


@dataclass(frozen=True)
class CFGZeroStar:
    """CFG-Zero*: optimised unconditional scale and zero-initialised first steps."""

    scale: float
    zero_init_steps: int = 1
    eps: float = 1e-8

    def __post_init__(self) -> None:
        _check_scale(self.scale)
        if self.zero_init_steps < 0:
            raise ValueError(f"zero_init_steps must be >= 0, got {self.zero_init_steps}")

    def mode(self, step: int, t: float) -> Mode:
        return "zero" if step < self.zero_init_steps else "both"

    def init_state(self) -> Any:
        return None

    def combine(self, v_c: Tensor, v_u: Tensor, x: Tensor, t: float, state: Any):
        # s* = ⟨v_c, v_u⟩ / ‖v_u‖² (in float32 at least, as diffusers does)
        work = torch.promote_types(v_c.dtype, torch.float32)
        c, u = v_c.to(work), v_u.to(work)
        s = (_flat_dot(c, u) / (_flat_dot(u, u) + self.eps)).to(v_u.dtype)
        su = s * v_u
        return su + self.scale * (v_c - su), state


@dataclass(frozen=True)
class APG:
    """Adaptive projected guidance on the data prediction (Sadat et al., Algorithm 1).

    ``eta`` weights the component of the update parallel to ``D_c`` (0 drops it),
    ``norm_threshold`` r caps the update's per-sample norm (0 disables),
    ``momentum`` β is the (negative) running-average coefficient (0 disables).
    """

    scale: float
    eta: float = 0.0
    norm_threshold: float = 0.0
    momentum: float = -0.5
    eps: float = 1e-6

    def __post_init__(self) -> None:
        _check_scale(self.scale)
        if self.norm_threshold < 0:
            raise ValueError(f"norm_threshold must be >= 0, got {self.norm_threshold}")

    def mode(self, step: int, t: float) -> Mode:
        return "both"

    def init_state(self) -> Any:
        return None  # the momentum buffer

    def combine(self, v_c: Tensor, v_u: Tensor, x: Tensor, t: float, state: Any):
        one_minus_t = max(1.0 - float(t), self.eps)
        d_c = x + one_minus_t * v_c
        diff = one_minus_t * (v_c - v_u)  # D_c − D_u
        if self.momentum != 0.0:
            diff = diff if state is None else diff + self.momentum * state
            state = diff
        if self.norm_threshold > 0:
            norm = diff.reshape(diff.shape[0], -1).norm(dim=1)
            factor = torch.clamp(self.norm_threshold / norm.clamp_min(1e-12), max=1.0)
            diff = diff * factor.reshape(-1, *([1] * (diff.ndim - 1)))
        work = torch.promote_types(diff.dtype, torch.float64)
        v0, v1 = diff.to(work), d_c.to(work)
        unit = v1 / _flat_dot(v1, v1).sqrt().clamp_min(1e-12)
        parallel = _flat_dot(v0, unit) * unit
        update = (v0 - parallel + self.eta * parallel).to(diff.dtype)
        d = d_c + (self.scale - 1.0) * update
        return (d - x) / one_minus_t, state


@dataclass(frozen=True)
class GuidanceInterval:
    """CFG with scale ``w`` for ``start ≤ t < stop``; the conditional velocity elsewhere."""

    scale: float
    start: float = 0.0
    stop: float = 1.0

    def __post_init__(self) -> None:
        _check_scale(self.scale)
        if not 0.0 <= self.start <= self.stop <= 1.0:
            raise ValueError(f"need 0 <= start <= stop <= 1, got {self.start}, {self.stop}")

    def mode(self, step: int, t: float) -> Mode:
        return "both" if self.start <= t < self.stop else "cond"

    def init_state(self) -> Any:
        return None

    def combine(self, v_c: Tensor, v_u: Tensor, x: Tensor, t: float, state: Any):
        return v_u + self.scale * (v_c - v_u), state
