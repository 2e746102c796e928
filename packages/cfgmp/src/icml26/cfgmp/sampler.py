"""Euler and Heun samplers with guidance, manifold projection and NFE accounting.

One sampling step from ``t_i`` to ``t_{i+1}`` (``h = t_{i+1} − t_i``), as in the
official code's two-phase scheme:

1. projection phase (CFG-MP/MP+ only, while ``t_i < interval``): ``z* = Proj(x_i)``;
2. guidance phase: ``v = rule(v_c(z*, t_i), v_u(z*, t_i))`` and ``x_{i+1} = z* + h·v``
   (Euler). Heun adds the trapezoidal correction with the guided velocity at
   ``(x_{i+1}, t_{i+1})``, except on the last step (as in EDM's Heun sampler; many
   models cannot be evaluated at t = 1).

Flow time runs from 0 (noise) to 1 (data); see :mod:`icml26.cfgmp.conventions`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from icml26.cfgmp.conventions import VelocityModel
from icml26.cfgmp.guidance import Guider
from icml26.cfgmp.nfe import Evaluator
from icml26.cfgmp.projection import ProjectionTrace

__all__ = ["SampleResult", "Solver", "sample", "uniform_times"]

Solver = Literal["euler", "heun"]


@dataclass
class SampleResult:
    """Samples and what it took to make them.

    ``nfe`` counts model evaluations per sample (a conditional and an unconditional
    prediction are 2, however they are batched); ``diagnostic_nfe`` counts the extra
    evaluations made only to measure the gap and residuals. ``gap[i]`` is the batch
    mean of ``‖v_c − v_u‖`` where the guidance rule was applied at step ``i`` (NaN
    where the rule evaluated nothing); ``gap_before[i]`` the same at the point before
    the projection (diagnostics only; NaN where the step was not corrected).
    ``path`` holds the state at the start of every step and the final samples when
    sampled with ``keep_path=True``.
    """

    x: Tensor
    nfe: int
    model_calls: int
    diagnostic_nfe: int
    times: Tensor
    gap: list[float] = field(default_factory=list)
    gap_before: list[float] = field(default_factory=list)
    projections: list[ProjectionTrace | None] = field(default_factory=list)
    path: list[Tensor] = field(default_factory=list)

    @property
    def corrected(self) -> list[bool]:
        return [p is not None for p in self.projections]


def uniform_times(steps: int) -> Tensor:
    """``steps + 1`` equally spaced flow times from 0 to 1 (float64)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    return torch.linspace(0.0, 1.0, steps + 1, dtype=torch.float64)


def _as_float64(values: Any) -> Tensor:
    if isinstance(values, Tensor):
        return values.detach().to("cpu", torch.float64)
    return torch.as_tensor(np.asarray(values, dtype=np.float64))


def _check_times(times: Any) -> Tensor:
    ts = _as_float64(times)
    if ts.ndim != 1 or ts.numel() < 2:
        raise ValueError(
            f"times must be a 1-D grid of at least 2 flow times, got {tuple(ts.shape)}"
        )
    if not torch.all(torch.isfinite(ts)) or ts.min() < 0 or ts.max() > 1:
        raise ValueError("flow times must lie in [0, 1] (t = 0 noise, t = 1 data)")
    if not torch.all(ts[1:] > ts[:-1]):
        raise ValueError("flow times must increase strictly (from noise to data)")
    return ts


def _gap(v_c: Tensor, v_u: Tensor) -> float:
    return float((v_c - v_u).reshape(v_c.shape[0], -1).float().norm(dim=1).mean())


def _check_cond(cond: Any, batch: int, name: str) -> None:
    if isinstance(cond, Tensor) and cond.ndim > 0 and cond.shape[0] != batch:
        raise ValueError(f"{name} has batch size {cond.shape[0]} but the noise has {batch}")


@torch.no_grad()
def sample(
    model: VelocityModel,
    noise: Tensor,
    cond: Any,
    guider: Guider,
    *,
    steps: int = 10,
    solver: Solver = "euler",
    times: Sequence[float] | Tensor | None = None,
    mid_times: Sequence[float] | Tensor | None = None,
    null_cond: Any = None,
    diagnostics: bool = False,
    keep_path: bool = False,
    step_starts: Sequence[float] | Tensor | None = None,
    residual_scales: Sequence[float] | Tensor | None = None,
) -> SampleResult:
    """Integrate the guided flow from ``noise`` (t = 0) to data (t = 1).

    Parameters
    ----------
    model:
        ``v(x, t, cond)`` in flow time; ``model(x, t, null_cond)`` is the
        unconditional velocity (``null_cond=None`` by default).
    noise:
        ``(B, ...)`` starting points ``x0 ~ N(0, I)``.
    cond:
        The condition passed to the model (e.g. a ``(B,)`` label tensor).
    guider:
        From :func:`cfg`, :func:`cfg_mp`, :func:`cfg_mp_plus`, ... .
    steps, times:
        ``steps`` uniform steps, or an explicit increasing grid of flow times.
    mid_times:
        Optional per-step half points for the projection's half step (the SD code's
        2N-point grid); ``(t_i + t_{i+1})/2`` by default.
    solver:
        ``"euler"`` (the paper's) or ``"heun"``.
    diagnostics:
        Also measure the gap before each projection and the fixed-point residual after
        it (extra evaluations, counted in ``diagnostic_nfe``, not in ``nfe``).
    keep_path:
        Keep the state at the start of every step (``result.path``).
    step_starts:
        Optional per-step times the Euler step advances from: ``x_{i+1} = z* +
        (t_{i+1} − s_i)·v`` while the model is still evaluated at ``t_i``
        (default ``s_i = t_i``). The official DiT loop evaluates its first step at the
        noisiest training timestep ``t_0 > 0`` but steps from ``s_0 = 0``.
    residual_scales:
        Optional per-step factors of the coordinates the Anderson weights are solved
        in (see :meth:`ManifoldProjection.project`; the DiT code's VP latents).
    """
    if not isinstance(noise, Tensor) or noise.ndim < 2:
        raise ValueError(f"noise must be a (B, ...) tensor, got {getattr(noise, 'shape', noise)}")
    if not torch.is_floating_point(noise):
        raise TypeError(f"noise must be a floating-point tensor, got {noise.dtype}")
    if not isinstance(guider, Guider):
        raise TypeError(f"guider must be a Guider (e.g. cfg(4.0)), got {type(guider).__name__}")
    if solver not in ("euler", "heun"):
        raise ValueError(f"solver must be 'euler' or 'heun', got {solver!r}")
    batch = noise.shape[0]
    if batch == 0 or noise.numel() == 0:
        raise ValueError(f"noise must hold at least one sample, got shape {tuple(noise.shape)}")
    _check_cond(cond, batch, "cond")
    _check_cond(null_cond, batch, "null_cond")
    ts = uniform_times(steps) if times is None else _check_times(times)
    n = ts.numel() - 1
    if mid_times is None:
        mids = (ts[:-1] + ts[1:]) / 2
    else:
        mids = _as_float64(mid_times)
        if mids.shape != (n,) or torch.any(mids < ts[:-1]) or torch.any(mids > ts[1:]):
            raise ValueError(f"mid_times must hold {n} points, each inside its step")
    starts = ts[:-1] if step_starts is None else _as_float64(step_starts)
    if starts.shape != (n,) or torch.any(starts > ts[:-1]) or torch.any(starts < 0):
        raise ValueError(f"step_starts must hold {n} times in [0, t_i], one per step")
    scales = torch.ones(n, dtype=torch.float64)
    if residual_scales is not None:
        scales = _as_float64(residual_scales)
        if scales.shape != (n,) or not torch.all(torch.isfinite(scales) & (scales > 0)):
            raise ValueError(f"residual_scales must hold {n} positive factors, one per step")

    ev = Evaluator(model, cond, null_cond)
    rule, proj = guider.rule, guider.projection
    state = rule.init_state()
    result = SampleResult(x=noise, nfe=0, model_calls=0, diagnostic_nfe=0, times=ts)

    def guided(z: Tensor, t: float, step: int) -> tuple[Tensor | None, float]:
        nonlocal state
        mode = rule.mode(step, t)
        if mode == "zero":
            return None, math.nan
        if mode == "cond":
            return ev.cond_velocity(z, t), math.nan
        v_c, v_u = ev.pair(z, t)
        v, state = rule.combine(v_c, v_u, z, t, state)
        return v, _gap(v_c, v_u)

    x = noise
    for i in range(n):
        t, t_next = float(ts[i]), float(ts[i + 1])
        h = t_next - float(starts[i])
        if keep_path:
            result.path.append(x)
        z, trace, before = x, None, math.nan
        if proj is not None and proj.active(t):
            if diagnostics:
                before = _gap(*ev.pair(x, t, diagnostic=True))
            z, trace = proj.project(
                ev,
                x,
                t,
                float(mids[i]) - t,
                diagnostics=diagnostics,
                residual_scale=float(scales[i]),
            )
        v, gap = guided(z, t, i)
        result.gap.append(gap)
        result.gap_before.append(before)
        result.projections.append(trace)
        if v is None:  # zero velocity (CFG-Zero*'s first step)
            x = z
            continue
        x_pred = z + h * v
        if solver == "heun" and i < n - 1:
            v2, _ = guided(x_pred, t_next, i)
            x = x_pred if v2 is None else z + 0.5 * h * (v + v2)
        else:
            x = x_pred
        if not torch.all(torch.isfinite(x)):
            raise FloatingPointError(f"non-finite samples at step {i} (t = {t:.3f})")

    result.x = x
    if keep_path:
        result.path.append(x)
    result.nfe, result.model_calls = ev.nfe, ev.model_calls
    result.diagnostic_nfe = ev.diagnostic_nfe
    return result
