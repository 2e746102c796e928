"""Time and prediction conventions, and converters between them.

The package has ONE convention, that of the paper and of its DiT code:

- flow time ``t`` runs from 0 (pure noise) to 1 (data);
- the linear interpolant is ``x_t = t·x1 + (1 − t)·x0`` with ``x0 ~ N(0, I)`` the noise
  and ``x1`` the data;
- a velocity model is a callable ``v(x, t, cond) -> dx/dt`` where ``x`` is a batch
  ``(B, ...)``, ``t`` a tensor ``(B,)`` and ``cond`` the condition (``None`` means the
  unconditional prediction). The flow-matching target is ``v = x1 − x0``, so
  ``v(x, t) = (E[x1 | x_t = x] − x) / (1 − t)``.

Models trained in other conventions are wrapped:

- :class:`FlowFromSigma` — rectified-flow models in the SD3 convention, where
  ``σ = 1 − t`` runs from 1 (noise) to 0 (data) and the model predicts
  ``u = dx/dσ = x0 − x1`` (noise minus data); ``v(x, t) = −u(x, 1 − t)``.
  :class:`SigmaFromFlow` is the inverse.
- :class:`FlowFromNoise` — a noise (ε) predictor on the same linear interpolant:
  ``v = (x − ε̂)/t``; :class:`NoiseFromFlow` is the inverse.
- :class:`FlowFromVPEpsilon` — an ε-prediction variance-preserving DDPM (DiT), through
  the official code's "D2F alignment" (``CFG-MP_DiT/utils_dit.py``): with
  ``α = sqrt(ᾱ)``, ``scale = 1/(α + sqrt(1 − α²))`` the flow state is
  ``x_flow = scale·x_vp`` at flow time ``t = α·scale``, and
  ``v = (x̂1 − scale·x_vp)/(1 − t)`` with ``x̂1 = (x_vp − sqrt(1 − ᾱ)·ε̂)/α``.
  :class:`VPEpsilonFromFlow` is the inverse (used to test the round trip).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

VelocityModel = Callable[[Tensor, Tensor, Any], Tensor]
"""``v(x, t, cond) -> dx/dt`` in flow time (t = 0 noise, t = 1 data)."""

__all__ = [
    "FlowFromNoise",
    "FlowFromSigma",
    "FlowFromVPEpsilon",
    "NoiseFromFlow",
    "SigmaFromFlow",
    "VPEpsilonFromFlow",
    "VelocityModel",
    "alpha_bar_from_flow_time",
    "data_from_velocity",
    "ddpm_alphas_cumprod",
    "flow_time_from_alpha_bar",
    "noise_from_velocity",
    "velocity_from_data",
    "velocity_from_noise",
]


def _bcast(t: Tensor, x: Tensor) -> Tensor:
    """``t`` of shape (B,) reshaped to broadcast against ``x`` of shape (B, ...)."""
    return t.reshape(t.shape[0], *([1] * (x.ndim - 1))).to(dtype=x.dtype)


# -- pointwise conversions on the linear interpolant x = t·x1 + (1 − t)·x0 ------------
def data_from_velocity(v: Tensor, x: Tensor, t: Tensor) -> Tensor:
    """``x̂1 = x + (1 − t)·v`` (the data prediction behind a velocity)."""
    return x + (1 - _bcast(t, x)) * v


def velocity_from_data(x1: Tensor, x: Tensor, t: Tensor) -> Tensor:
    """``v = (x̂1 − x)/(1 − t)``; undefined at ``t = 1``."""
    return (x1 - x) / (1 - _bcast(t, x))


def noise_from_velocity(v: Tensor, x: Tensor, t: Tensor) -> Tensor:
    """``ε̂ = x − t·v`` (the noise prediction behind a velocity)."""
    return x - _bcast(t, x) * v


def velocity_from_noise(eps: Tensor, x: Tensor, t: Tensor) -> Tensor:
    """``v = (x − ε̂)/t``; undefined at ``t = 0``."""
    return (x - eps) / _bcast(t, x)


# -- wrappers ----------------------------------------------------------------------------
class FlowFromSigma:
    """An SD3-style rectified-flow model ``u(x, σ, cond)`` seen in flow time.

    ``σ = 1 − t``; ``u = dx/dσ``, hence ``v(x, t) = −u(x, 1 − t)``.
    """

    def __init__(self, model: Callable[[Tensor, Tensor, Any], Tensor]):
        self.model = model

    def __call__(self, x: Tensor, t: Tensor, cond: Any = None) -> Tensor:
        return -self.model(x, 1 - t, cond)


class SigmaFromFlow:
    """A flow-time velocity model seen in the SD3 convention: ``u(x, σ) = −v(x, 1 − σ)``."""

    def __init__(self, model: VelocityModel):
        self.model = model

    def __call__(self, x: Tensor, sigma: Tensor, cond: Any = None) -> Tensor:
        return -self.model(x, 1 - sigma, cond)


class FlowFromNoise:
    """A noise predictor ``ε̂(x, t, cond)`` on the linear interpolant, as a velocity.

    ``t`` is clamped to ``t_min`` because ``v = (x − ε̂)/t`` is singular at pure noise.
    """

    def __init__(self, model: Callable[[Tensor, Tensor, Any], Tensor], t_min: float = 1e-4):
        self.model, self.t_min = model, float(t_min)

    def __call__(self, x: Tensor, t: Tensor, cond: Any = None) -> Tensor:
        t = t.clamp(min=self.t_min)
        return velocity_from_noise(self.model(x, t, cond), x, t)


class NoiseFromFlow:
    """A velocity model as a noise predictor: ``ε̂ = x − t·v``."""

    def __init__(self, model: VelocityModel):
        self.model = model

    def __call__(self, x: Tensor, t: Tensor, cond: Any = None) -> Tensor:
        return noise_from_velocity(self.model(x, t, cond), x, t)


# -- variance-preserving DDPM (DiT) <-> flow ---------------------------------------------
def ddpm_alphas_cumprod(
    num_train_timesteps: int = 1000, beta_start: float = 1e-4, beta_end: float = 0.02
) -> np.ndarray:
    """``ᾱ_i`` of DiT's linear beta schedule, in float64 (as in the official code)."""
    if num_train_timesteps < 2:
        raise ValueError(f"num_train_timesteps must be >= 2, got {num_train_timesteps}")
    if not 0 < beta_start < beta_end < 1:
        raise ValueError(f"need 0 < beta_start < beta_end < 1, got {beta_start}, {beta_end}")
    betas = np.linspace(beta_start, beta_end, num_train_timesteps, dtype=np.float64)
    return np.cumprod(1.0 - betas)


def flow_time_from_alpha_bar(alpha_bar: np.ndarray | Tensor) -> np.ndarray | Tensor:
    """D2F: ``t = sqrt(ᾱ)/(sqrt(ᾱ) + sqrt(1 − ᾱ))``."""
    lib = torch if isinstance(alpha_bar, Tensor) else np
    a, b = lib.sqrt(alpha_bar), lib.sqrt(1 - alpha_bar)
    return a / (a + b)


def alpha_bar_from_flow_time(t: np.ndarray | Tensor) -> np.ndarray | Tensor:
    """The inverse of :func:`flow_time_from_alpha_bar`: ``ᾱ = t²/(t² + (1 − t)²)``."""
    return t**2 / (t**2 + (1 - t) ** 2)


class FlowFromVPEpsilon:
    """An ε-prediction VP model (DiT) as a flow-time velocity (the official D2F alignment).

    ``model(x_vp, timestep, cond) -> ε̂`` takes the (fractional) training timestep.
    A flow time maps to ``ᾱ = t²/(t² + (1 − t)²)``, then to the training timestep by
    interpolating the schedule, so that the D2F grid points land exactly on the
    training timesteps the official code picks. Times outside the schedule's range
    are clamped to it (the code evaluates its first step at the noisiest training
    timestep as well).
    """

    def __init__(
        self,
        model: Callable[[Tensor, Tensor, Any], Tensor],
        alphas_cumprod: np.ndarray | None = None,
    ):
        self.model = model
        ab = ddpm_alphas_cumprod() if alphas_cumprod is None else np.asarray(alphas_cumprod)
        if ab.ndim != 1 or ab.size < 2 or np.any(np.diff(ab) >= 0) or ab[0] >= 1 or ab[-1] <= 0:
            raise ValueError("alphas_cumprod must be a strictly decreasing schedule in (0, 1)")
        self.alphas_cumprod = ab.astype(np.float64)
        self.flow_times = flow_time_from_alpha_bar(self.alphas_cumprod)  # decreasing in i
        self.t_min, self.t_max = float(self.flow_times[-1]), float(self.flow_times[0])

    def timestep(self, t: Tensor) -> Tensor:
        """The fractional training timestep whose flow time is ``t`` (clamped)."""
        tc = t.detach().double().clamp(self.t_min, self.t_max).cpu().numpy()
        idx = np.arange(self.flow_times.size, dtype=np.float64)
        # np.interp needs increasing abscissae: flow time rises as the index falls
        frac = np.interp(tc, self.flow_times[::-1], idx[::-1])
        return torch.as_tensor(frac, device=t.device)

    def coefficients(self, t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(α, sqrt(1 − ᾱ), scale)`` at the clamped flow time ``t``."""
        tc = t.double().clamp(self.t_min, self.t_max)
        ab = alpha_bar_from_flow_time(tc)
        a, b = ab.sqrt(), (1 - ab).sqrt()
        return a, b, 1 / (a + b)

    def __call__(self, x: Tensor, t: Tensor, cond: Any = None) -> Tensor:
        a, b, scale = self.coefficients(t)
        tc = (a * scale).to(x.dtype)
        a, b, scale = (_bcast(c, x) for c in (a, b, scale))
        x_vp = x / scale
        eps = self.model(x_vp, self.timestep(t), cond)
        x1 = (x_vp - b * eps) / a
        return (x1 - x) / (1 - _bcast(tc, x))


class VPEpsilonFromFlow:
    """A flow-time velocity model as an ε-prediction VP model (inverse of D2F)."""

    def __init__(self, model: VelocityModel, alphas_cumprod: np.ndarray | None = None):
        self.model = model
        ab = ddpm_alphas_cumprod() if alphas_cumprod is None else np.asarray(alphas_cumprod)
        self.flow_times = flow_time_from_alpha_bar(ab.astype(np.float64))

    def __call__(self, x_vp: Tensor, timestep: Tensor, cond: Any = None) -> Tensor:
        # the same piecewise-linear timestep <-> flow-time map as FlowFromVPEpsilon uses
        idx = torch.as_tensor(timestep, dtype=torch.float64).cpu().numpy()
        t = np.interp(idx, np.arange(self.flow_times.size, dtype=np.float64), self.flow_times)
        t = torch.as_tensor(t, device=x_vp.device)
        ab = alpha_bar_from_flow_time(t)
        a, b = ab.sqrt(), (1 - ab).sqrt()
        scale = 1 / (a + b)
        x = x_vp * _bcast(scale, x_vp)
        v = self.model(x, t.to(x_vp.dtype), cond)
        x1 = data_from_velocity(v, x, t.to(x_vp.dtype))
        # x_vp = a·x1 + b·ε  =>  ε = (x_vp − a·x1)/b
        return (x_vp - _bcast(a, x_vp) * x1) / _bcast(b, x_vp)
