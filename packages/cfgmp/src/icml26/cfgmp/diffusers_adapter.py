"""Drive diffusers transformers (DiT, SD3) with the CFG-MP samplers (extra ``diffusers``).

The official code ships a DiT-XL-2-256 script and a subclass of diffusers'
``StableDiffusion3Pipeline``; here the same two setups are velocity models for
:func:`icml26.cfgmp.sample`, with the official time grids:

- :class:`DiTVelocity` wraps a ``DiTTransformer2DModel`` (ε-prediction VP DDPM, learned
  variance: only the first ``in_channels`` output channels are used) through the
  D2F conversion (:class:`~icml26.cfgmp.conventions.FlowFromVPEpsilon`); the
  condition is a ``(B,)`` class-label tensor, ``None`` is the null class (1000).
  :func:`dit_times` is the code's D2F-aligned grid, :func:`dit_guider` its settings.
- :class:`SD3Velocity` wraps an ``SD3Transformer2DModel`` (rectified flow, ``σ = 1 − t``,
  timestep ``σ·1000``); the condition is ``(prompt_embeds, pooled_prompt_embeds)``.
  :func:`sd3_times` is the code's 2N-point shifted grid (each step's odd point is the
  projection's half step), :func:`sd3_guider` its settings (operator H while
  σ ≥ 0.95, correction while σ > 0.6, Anderson via least squares, tol 1e-6).

Nothing is downloaded: pass transformers you have loaded (``DiTPipeline.from_pretrained``
on a local folder) or built from a config.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from icml26.cfgmp.conventions import (
    FlowFromVPEpsilon,
    ddpm_alphas_cumprod,
    flow_time_from_alpha_bar,
)
from icml26.cfgmp.guidance import Guider, cfg_mp, cfg_mp_plus
from icml26.cfgmp.sampler import SampleResult, Solver, sample

__all__ = [
    "DiTVelocity",
    "SD3Velocity",
    "dit_guider",
    "dit_times",
    "sample_dit",
    "sample_sd3",
    "sd3_guider",
    "sd3_times",
]


# -- DiT (class-conditional ε-prediction DDPM) -------------------------------------------
def dit_times(steps: int, alphas_cumprod: np.ndarray | None = None) -> np.ndarray:
    """The official D2F grid: training timesteps nearest to ``linspace(0, 1, N)`` in
    flow time (``endpoint=False``), as flow times, starting from 0 and ending at 1.

    The code evaluates its first step at the noisiest training timestep but steps
    from t = 0 (``dt = t_next`` at step 0); here the grid starts at 0 and the
    converter clamps t = 0 to that timestep.
    """
    if steps < 1:
        raise ValueError(f"steps must be positive, got {steps}")
    ab = ddpm_alphas_cumprod() if alphas_cumprod is None else np.asarray(alphas_cumprod)
    flow = flow_time_from_alpha_bar(ab)
    ideal = np.linspace(0.0, 1.0, steps, endpoint=False)
    idx = np.argmin(np.abs(ideal[:, None] - flow[None, :]), axis=1)
    times = np.concatenate([[0.0], flow[idx[1:]], [1.0]])
    if np.any(np.diff(times) <= 0):
        raise ValueError(f"{steps} steps are too many for a {ab.size}-step schedule")
    return times


class DiTVelocity:
    """A diffusers ``DiTTransformer2DModel`` as a flow-time velocity ``v(x, t, labels)``."""

    def __init__(self, transformer: Any, *, null_class: int = 1000, alphas_cumprod: Any = None):
        self.transformer = transformer
        self.null_class = int(null_class)
        self.channels = int(transformer.config.in_channels)
        self.flow = FlowFromVPEpsilon(self._eps, alphas_cumprod)

    def _labels(self, labels: Any, batch: int, device: torch.device) -> Tensor:
        if labels is None:
            return torch.full((batch,), self.null_class, dtype=torch.long, device=device)
        labels = torch.as_tensor(labels, device=device).long()
        if labels.shape != (batch,):
            raise ValueError(f"class labels must have shape ({batch},), got {tuple(labels.shape)}")
        return labels

    def _eps(self, x_vp: Tensor, timestep: Tensor, labels: Tensor) -> Tensor:
        p = next(self.transformer.parameters())
        out = self.transformer(
            x_vp.to(p.dtype), timestep=timestep.to(x_vp.device), class_labels=labels
        ).sample
        if out.shape[1] == 2 * self.channels:  # learned variance: keep ε
            out = out[:, : self.channels]
        return out.to(x_vp.dtype)

    def __call__(self, x: Tensor, t: Tensor, cond: Any = None) -> Tensor:
        return self.flow(x, t, self._labels(cond, x.shape[0], x.device))

    def velocity_pair(
        self, x: Tensor, t: Tensor, cond: Any, null_cond: Any = None
    ) -> tuple[Tensor, Tensor]:
        b = x.shape[0]
        labels = torch.cat([self._labels(cond, b, x.device), self._labels(null_cond, b, x.device)])
        v = self.flow(torch.cat([x, x]), torch.cat([t, t]), labels)
        return v[:b], v[b:]


def dit_guider(scale: float = 1.75, *, anderson: bool = True, iterations: int = 2) -> Guider:
    """The DiT demo: K = 2, m = 1, β = 1, correction while t < 0.6, operator G."""
    if anderson:
        return cfg_mp_plus(scale, iterations, window=1, damping=1.0, interval=0.6)
    return cfg_mp(scale, iterations, interval=0.6)


@torch.no_grad()
def sample_dit(
    transformer: Any,
    class_labels: Tensor,
    *,
    guider: Guider | None = None,
    steps: int = 10,
    generator: torch.Generator | None = None,
    noise: Tensor | None = None,
    solver: Solver = "euler",
    null_class: int = 1000,
    diagnostics: bool = False,
) -> SampleResult:
    """Class-conditional DiT latents (decode with the pipeline's VAE:
    ``vae.decode(x / vae.config.scaling_factor)``)."""
    p = next(transformer.parameters())
    cfg_ = transformer.config
    labels = torch.as_tensor(class_labels, device=p.device).long()
    if noise is None:
        shape = (labels.shape[0], cfg_.in_channels, cfg_.sample_size, cfg_.sample_size)
        noise = torch.randn(shape, generator=generator, dtype=torch.float32).to(p.device)
    model = DiTVelocity(transformer, null_class=null_class)
    return sample(
        model,
        noise,
        labels,
        guider or dit_guider(),
        times=dit_times(steps),
        solver=solver,
        diagnostics=diagnostics,
    )


# -- SD3 (rectified flow, text-conditional) ----------------------------------------------
def sd3_times(steps: int, shift: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """The SD code's grid: ``2N`` σ's ``μs/(1 + (μ − 1)s)``, ``s = linspace(1, 1e-4, 2N)``,
    then 0. Returns flow times ``1 − σ`` of the steps (N + 1) and of the half points (N)."""
    if steps < 1:
        raise ValueError(f"steps must be positive, got {steps}")
    if shift <= 0:
        raise ValueError(f"shift must be positive, got {shift}")
    s = np.linspace(1.0, 1e-4, 2 * steps)
    sigmas = np.append(shift * s / (1 + (shift - 1) * s), 0.0)
    t = 1.0 - sigmas
    return t[0::2], t[1::2]


class SD3Velocity:
    """A diffusers ``SD3Transformer2DModel`` as a flow-time velocity.

    ``cond`` is a pair ``(prompt_embeds, pooled_prompt_embeds)``; the unconditional
    prediction uses the negative pair passed as ``null_cond``.
    """

    def __init__(self, transformer: Any, joint_attention_kwargs: dict | None = None):
        self.transformer = transformer
        self.joint_attention_kwargs = joint_attention_kwargs

    @staticmethod
    def _unpack(cond: Any) -> tuple[Tensor, Tensor]:
        if not (isinstance(cond, tuple | list) and len(cond) == 2):
            raise TypeError("an SD3 condition is a pair (prompt_embeds, pooled_prompt_embeds)")
        return cond[0], cond[1]

    def _u(self, x: Tensor, sigma: Tensor, embeds: Tensor, pooled: Tensor) -> Tensor:
        p = next(self.transformer.parameters())
        out = self.transformer(
            hidden_states=x.to(p.dtype),
            timestep=(sigma * 1000.0).to(p.dtype),
            encoder_hidden_states=embeds.to(p.dtype),
            pooled_projections=pooled.to(p.dtype),
            joint_attention_kwargs=self.joint_attention_kwargs,
            return_dict=False,
        )[0]
        return out.to(x.dtype)

    def __call__(self, x: Tensor, t: Tensor, cond: Any) -> Tensor:
        embeds, pooled = self._unpack(cond)
        return -self._u(x, 1 - t, embeds, pooled)  # v = dx/dt = −dx/dσ

    def velocity_pair(
        self, x: Tensor, t: Tensor, cond: Any, null_cond: Any
    ) -> tuple[Tensor, Tensor]:
        (e_c, p_c), (e_u, p_u) = self._unpack(cond), self._unpack(null_cond)
        b = x.shape[0]
        u = self._u(
            torch.cat([x, x]), 1 - torch.cat([t, t]), torch.cat([e_c, e_u]), torch.cat([p_c, p_u])
        )
        return -u[:b], -u[b:]


def sd3_guider(scale: float = 4.5, *, anderson: bool = True, iterations: int = 3) -> Guider:
    """The SD demo: max_aa_iter 3, m = 1, β = 1, ridge 1e-4, tol 1e-6, σ > 0.6, H while σ ≥ 0.95."""
    common = {"interval": 0.4, "operator": "auto", "tol": 1e-6}
    if anderson:
        return cfg_mp_plus(scale, iterations, window=1, damping=1.0, solver="lstsq", **common)
    return cfg_mp(scale, iterations, **common)


@torch.no_grad()
def sample_sd3(
    transformer: Any,
    prompt_embeds: Tensor,
    pooled_prompt_embeds: Tensor,
    negative_prompt_embeds: Tensor,
    negative_pooled_prompt_embeds: Tensor,
    *,
    latents: Tensor,
    guider: Guider | None = None,
    steps: int = 10,
    shift: float = 3.0,
    diagnostics: bool = False,
) -> SampleResult:
    """SD3 latents from ``latents`` (noise at σ = 1) on the SD code's shifted grid."""
    times, mids = sd3_times(steps, shift)
    return sample(
        SD3Velocity(transformer),
        latents,
        (prompt_embeds, pooled_prompt_embeds),
        guider or sd3_guider(),
        times=times,
        mid_times=mids,
        null_cond=(negative_prompt_embeds, negative_pooled_prompt_embeds),
        diagnostics=diagnostics,
    )
