"""The manifold projection of CFG-MP / CFG-MP+ (the "projection phase").

Before the CFG step at flow time ``t`` with step ``h`` (and half step ``h/2``), the
latent is moved towards the set where conditional and unconditional predictions
agree by the incremental-gradient fixed-point iteration of the official code
(``step_anderson_correction`` in ``CFG-MP_DiT/utils_dit.py``; ``iterate_fixed_point``
in ``CFG-MP_SD/utils_SD.py``). Operator G (the default and the DiT code's only one):

    x̃ = z − (h/2)·v_u(z, t),      G(z) = x̃ + (h/2)·v_c(x̃, t),

and operator H (the SD code, used while σ ≥ 0.95, i.e. t ≤ 0.05):

    z̃ = z + (h/2)·v_c(z, t),      H(z) = z̃ − (h/2)·v_u(z̃, t).

Both velocities are evaluated at the SAME time ``t`` (as in the code; not t ± h/2).
Each application costs 2 sequential NFEs. To first order ``G(z) − z = (h/2)·Δ(z, t)``
with the prediction gap ``Δ = v_c − v_u`` (reconstructed reading), so the iteration
moves the latent along the gap until the two predictions agree.

CFG-MP iterates ``z ← G(z)`` (Picard) ``K`` times; CFG-MP+ applies Anderson
acceleration (:mod:`icml26.cfgmp.anderson`; first iteration plain Picard, then the
mixing of the last ``m + 1`` pairs). The projection runs only in the early, noisy
part of the trajectory: while ``t < interval`` (DiT code: ``t_curr < 0.6``; the SD
code's ``σ > 0.6`` is ``interval = 0.4``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor

from icml26.cfgmp.anderson import AndersonSolver, anderson_mix, anderson_weights
from icml26.cfgmp.nfe import Evaluator

__all__ = ["ManifoldProjection", "ProjectionTrace"]

Operator = Literal["G", "H", "auto"]


def _per_sample_norm(x: Tensor) -> Tensor:
    return x.reshape(x.shape[0], -1).float().norm(dim=1)


@dataclass
class ProjectionTrace:
    """What one projection phase did (means over the batch of per-sample L2 norms)."""

    t: float
    operator: str
    residuals: list[float] = field(default_factory=list)  # ‖G(z_k) − z_k‖, k = 0..K'−1
    iterations: int = 0  # K' ≤ K (early exit on ``tol``)
    final_residual: float | None = None  # ‖G(z*) − z*‖ at the returned point (diagnostic)


@dataclass(frozen=True)
class ManifoldProjection:
    """Settings of the projection phase (defaults: the official DiT demo).

    Parameters
    ----------
    iterations:
        ``K``, fixed-point iterations per corrected step (``aa_correction_steps`` = 2
        in the DiT demo, ``max_aa_iter`` = 3 in the SD demo). ``K = 0`` disables it.
    anderson:
        False for CFG-MP (Picard), True for CFG-MP+ (Anderson acceleration).
    window:
        ``m``, the Anderson history window (1 in both demos); ``m = 0`` is Picard.
    damping:
        ``β`` in ``(1 − β)·Σ a_i z_i + β·Σ a_i g_i`` (1.0 in both demos).
    ridge:
        Tikhonov regularisation of the Anderson least squares (1e-4).
    solver:
        ``"gram"`` (DiT code) or ``"lstsq"`` (SD code) Anderson weights.
    tol:
        Early exit when the batch mean of ``|G(z) − z|`` falls below it (SD code: 1e-6;
        the DiT code has none: ``None``).
    interval:
        Project while ``t < interval``: the fraction of the trajectory, from noise,
        that is corrected. Must lie in [0, 1].
    operator:
        ``"G"``, ``"H"``, or ``"auto"`` (H while ``t ≤ h_until``, then G; SD code).
    h_until:
        The switch time of ``"auto"`` (0.05, the SD code's σ ≥ 0.95).
    """

    iterations: int = 2
    anderson: bool = False
    window: int = 1
    damping: float = 1.0
    ridge: float = 1e-4
    solver: AndersonSolver = "gram"
    tol: float | None = None
    interval: float = 0.6
    operator: Operator = "G"
    h_until: float = 0.05

    def __post_init__(self) -> None:
        if isinstance(self.iterations, bool) or not isinstance(self.iterations, int):
            raise TypeError(f"iterations must be an int, got {type(self.iterations).__name__}")
        if self.iterations < 0:
            raise ValueError(f"iterations (K) must be >= 0, got {self.iterations}")
        if not isinstance(self.window, int) or self.window < 0:
            raise ValueError(f"window (m) must be an int >= 0, got {self.window!r}")
        if not (math.isfinite(self.damping) and 0 < self.damping <= 1):
            raise ValueError(f"damping (β) must lie in (0, 1], got {self.damping}")
        if not (math.isfinite(self.ridge) and self.ridge >= 0):
            raise ValueError(f"ridge must be >= 0, got {self.ridge}")
        if self.solver not in ("gram", "lstsq"):
            raise ValueError(f"solver must be 'gram' or 'lstsq', got {self.solver!r}")
        if self.tol is not None and not self.tol >= 0:
            raise ValueError(f"tol must be None or >= 0, got {self.tol}")
        if not (isinstance(self.interval, int | float) and 0.0 <= self.interval <= 1.0):
            raise ValueError(
                f"the guidance window (interval) must lie in [0, 1], got {self.interval}"
            )
        if self.operator not in ("G", "H", "auto"):
            raise ValueError(f"operator must be 'G', 'H' or 'auto', got {self.operator!r}")
        if not 0.0 <= self.h_until <= 1.0:
            raise ValueError(f"h_until must lie in [0, 1], got {self.h_until}")

    def active(self, t: float) -> bool:
        """Whether the step starting at flow time ``t`` is corrected."""
        return self.iterations > 0 and t < self.interval

    def operator_at(self, t: float) -> str:
        if self.operator == "auto":
            return "H" if t <= self.h_until else "G"
        return self.operator

    def nfe_per_step(self) -> int:
        """NFEs one corrected step spends on the projection (without early exit)."""
        return 2 * self.iterations

    # -- the phase --------------------------------------------------------------------
    def apply_operator(
        self, ev: Evaluator, z: Tensor, t: float, half: float, op: str, *, diagnostic: bool = False
    ) -> Tensor:
        """``G(z)`` or ``H(z)`` with half step ``half`` (2 NFEs)."""
        if op == "G":
            x_half = z - half * ev.uncond_velocity(z, t, diagnostic=diagnostic)
            return x_half + half * ev.cond_velocity(x_half, t, diagnostic=diagnostic)
        z_tmp = z + half * ev.cond_velocity(z, t, diagnostic=diagnostic)
        return z_tmp - half * ev.uncond_velocity(z_tmp, t, diagnostic=diagnostic)

    def project(
        self,
        ev: Evaluator,
        x: Tensor,
        t: float,
        half: float,
        *,
        diagnostics: bool = False,
        residual_scale: float = 1.0,
    ) -> tuple[Tensor, ProjectionTrace]:
        """Run the K iterations from ``x`` at time ``t``; returns ``z*`` and its trace.

        ``residual_scale`` is the factor ``c`` of the coordinates the Anderson weights
        are solved in: residuals ``f/c``. The iteration itself is linear in the state,
        so only the ridge (and the ``1e-8`` guard) feel it. The official DiT code
        iterates on the VP latent ``x_vp = x_flow/scale``: ``c = scale`` there.
        """
        if not (math.isfinite(residual_scale) and residual_scale > 0):
            raise ValueError(f"residual_scale must be positive, got {residual_scale}")
        op = self.operator_at(t)
        trace = ProjectionTrace(t=float(t), operator=op)
        b = x.shape[0]
        z = x
        zs: list[Tensor] = []
        gs: list[Tensor] = []
        fs: list[Tensor] = []
        for k in range(self.iterations):
            g = self.apply_operator(ev, z, t, half, op)
            f = g - z
            trace.residuals.append(float(_per_sample_norm(f).mean()))
            trace.iterations = k + 1
            z_next = g  # Picard, and the first iteration of Anderson
            if self.anderson:  # m = 0 reduces to (damped) Picard, as in the DiT code
                zs.append(z.reshape(b, -1))
                gs.append(g.reshape(b, -1))
                fs.append(
                    f.reshape(b, -1) if residual_scale == 1.0 else f.reshape(b, -1) / residual_scale
                )
                if len(fs) > self.window + 1:  # sliding window of m + 1 pairs
                    del zs[0], gs[0], fs[0]
                if k > 0:
                    a = anderson_weights(torch.stack(fs, 1), ridge=self.ridge, solver=self.solver)
                    mixed = anderson_mix(torch.stack(zs, 1), torch.stack(gs, 1), a, self.damping)
                    z_next = mixed.reshape(x.shape)
            z = z_next
            if self.tol is not None and float(f.abs().mean()) < self.tol:
                break
        if diagnostics and self.iterations > 0:
            g = self.apply_operator(ev, z, t, half, op, diagnostic=True)
            trace.final_residual = float(_per_sample_norm(g - z).mean())
        return z, trace
