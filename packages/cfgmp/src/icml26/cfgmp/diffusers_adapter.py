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

from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from icml26.cfgmp.conventions import (
    FlowFromVPEpsilon,
    alpha_bar_from_flow_time,
    ddpm_alphas_cumprod,
    flow_time_from_alpha_bar,
)
from icml26.cfgmp.guidance import Guider, cfg_mp, cfg_mp_plus
from icml26.cfgmp.sampler import SampleResult, Solver, sample

__all__ = [
    "DiTAlignment",
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
DiTAlignment = Literal["official", "flow"]


def dit_times(
    steps: int, alphas_cumprod: np.ndarray | None = None, *, from_zero: bool = False
) -> np.ndarray:
    """The official D2F grid: the flow times of the training timesteps nearest to
    ``linspace(0, 1, N, endpoint=False)`` (``_get_flow_matching_sigmas``), then 1.

    The first point is the noisiest training timestep's flow time ``t₀ ≈ 0.006``,
    where the code evaluates the model. ``from_zero=True`` replaces it by 0 (the
    ``alignment="flow"`` variant of :func:`sample_dit`).
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    ab = ddpm_alphas_cumprod() if alphas_cumprod is None else np.asarray(alphas_cumprod)
    flow = flow_time_from_alpha_bar(ab)
    ideal = np.linspace(0.0, 1.0, steps, endpoint=False)
    idx = np.argmin(np.abs(ideal[:, None] - flow[None, :]), axis=1)
    times = np.concatenate([flow[idx], [1.0]])
    if from_zero:
        times[0] = 0.0
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
        labels = torch.as_tensor(labels, device=device)
        if labels.dtype.is_floating_point or labels.dtype == torch.bool:
            raise TypeError(f"class labels must be integers, got {labels.dtype}")
        labels = labels.long()
        if labels.shape != (batch,):
            raise ValueError(f"class labels must have shape ({batch},), got {tuple(labels.shape)}")
        if batch and (int(labels.min()) < 0 or int(labels.max()) > self.null_class):
            raise ValueError(
                f"class labels must lie in 0..{self.null_class} ({self.null_class} is the "
                f"null class), got {int(labels.min())}..{int(labels.max())}"
            )
        return labels

    def _check_x(self, x: Tensor) -> None:
        if x.ndim != 4 or x.shape[1] != self.channels:
            raise ValueError(
                f"DiT latents must be (B, {self.channels}, H, W), got {tuple(x.shape)}"
            )

    def _eps(self, x_vp: Tensor, timestep: Tensor, labels: Tensor) -> Tensor:
        p = next(self.transformer.parameters())
        out = self.transformer(
            x_vp.to(p.dtype), timestep=timestep.to(x_vp.device), class_labels=labels
        ).sample
        if out.shape[1] == 2 * self.channels:  # learned variance: keep ε
            out = out[:, : self.channels]
        return out.to(x_vp.dtype)

    def __call__(self, x: Tensor, t: Tensor, cond: Any = None) -> Tensor:
        self._check_x(x)
        return self.flow(x, t, self._labels(cond, x.shape[0], x.device))

    def velocity_pair(
        self, x: Tensor, t: Tensor, cond: Any, null_cond: Any = None
    ) -> tuple[Tensor, Tensor]:
        self._check_x(x)
        b = x.shape[0]
        labels = torch.cat([self._labels(cond, b, x.device), self._labels(null_cond, b, x.device)])
        v = self.flow(torch.cat([x, x]), torch.cat([t, t]), labels)
        return v[:b], v[b:]


def dit_guider(scale: float = 1.75, *, anderson: bool = True, iterations: int = 2) -> Guider:
    """The DiT demo: K = 2, m = 1, β = 1, correction while t < 0.6, operator G."""
    if anderson:
        return cfg_mp_plus(scale, iterations, window=1, damping=1.0, interval=0.6)
    return cfg_mp(scale, iterations, interval=0.6)


def _vp_scale(t: np.ndarray) -> np.ndarray:
    """``scale = 1/(α + sqrt(1 − α²))`` at flow time ``t`` (``x_flow = scale·x_vp``)."""
    ab = alpha_bar_from_flow_time(np.asarray(t, dtype=np.float64))
    return 1.0 / (np.sqrt(ab) + np.sqrt(1.0 - ab))


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
    alignment: DiTAlignment = "official",
) -> SampleResult:
    """Class-conditional DiT latents (decode with the pipeline's VAE:
    ``vae.decode(x / vae.config.scaling_factor)``).

    ``alignment="official"`` (default) is the official loop (``demo_dit.py`` with
    ``CFGMPScheduler``) step for step: ``noise`` is the VP latent at the noisiest
    training timestep (what ``torch.randn`` gives the demo), the flow state starts at
    ``scale₀·noise``, the model is evaluated at ``t₀ ≈ 0.006`` while the first Euler
    step advances from ``t = 0`` (``dt = t_next``), the first projection's half step
    is ``(t₁ − t₀)/2``, and the Anderson ridge acts on residuals of the VP latents.

    ``alignment="flow"`` is the earlier variant of this package: the grid starts at
    ``t = 0`` with the flow state ``noise`` (the model clamped to ``t₀``), a first
    half step ``t₁/2``, and the ridge on flow-coordinate residuals. CFG-MP differs
    from the official loop by a few per cent of its effect, CFG-MP+ by about a fifth.
    """
    if alignment not in ("official", "flow"):
        raise ValueError(f"alignment must be 'official' or 'flow', got {alignment!r}")
    p = next(transformer.parameters())
    cfg_ = transformer.config
    labels = torch.as_tensor(class_labels, device=p.device)
    if labels.ndim != 1 or labels.shape[0] == 0:
        raise ValueError(f"class_labels must be a non-empty (B,) tensor, got {tuple(labels.shape)}")
    shape = (labels.shape[0], cfg_.in_channels, cfg_.sample_size, cfg_.sample_size)
    if noise is None:
        noise = torch.randn(shape, generator=generator, dtype=torch.float32).to(p.device)
    elif not isinstance(noise, Tensor) or tuple(noise.shape) != shape:
        raise ValueError(
            f"noise must be a tensor of shape {shape} (batch, in_channels, sample_size, "
            f"sample_size), got {tuple(getattr(noise, 'shape', ()))}"
        )
    model = DiTVelocity(transformer, null_class=null_class)
    model._labels(labels, labels.shape[0], labels.device)  # fail early on bad labels
    times = dit_times(steps, from_zero=alignment == "flow")
    extra: dict[str, Any] = {}
    start = noise
    if alignment == "official":
        scales = _vp_scale(times[:-1])
        start = noise * float(scales[0])
        extra = {
            "step_starts": np.concatenate([[0.0], times[1:-1]]),
            "residual_scales": scales,
        }
    return sample(
        model,
        start,
        labels,
        guider or dit_guider(),
        times=times,
        solver=solver,
        diagnostics=diagnostics,
        **extra,
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
        if not (
            isinstance(cond, tuple | list)
            and len(cond) == 2
            and all(isinstance(c, Tensor) for c in cond)
        ):
            raise TypeError(
                "an SD3 condition is a pair of tensors (prompt_embeds, pooled_prompt_embeds), "
                f"got {type(cond).__name__}"
            )
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
    if not isinstance(latents, Tensor) or latents.ndim != 4 or latents.shape[0] == 0:
        raise ValueError(
            "latents must be a non-empty (B, C, H, W) tensor, got "
            f"{getattr(latents, 'shape', latents)!r}"
        )
    channels = int(transformer.config.in_channels)
    if latents.shape[1] != channels:
        raise ValueError(
            f"latents have {latents.shape[1]} channels, the transformer takes {channels}"
        )
    named = {
        "prompt_embeds": prompt_embeds,
        "pooled_prompt_embeds": pooled_prompt_embeds,
        "negative_prompt_embeds": negative_prompt_embeds,
        "negative_pooled_prompt_embeds": negative_pooled_prompt_embeds,
    }
    for name, value in named.items():
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{name} must be a tensor (encode the prompt, or pass zeros for an empty "
                f"negative prompt), got {type(value).__name__}"
            )
        if value.shape[0] != latents.shape[0]:
            raise ValueError(
                f"{name} has batch size {value.shape[0]} but the latents have {latents.shape[0]}"
            )
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
