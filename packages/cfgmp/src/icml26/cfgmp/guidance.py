"""Guiders: a guidance rule plus, for CFG-MP / CFG-MP+, the manifold projection.

A :class:`Guider` is what :func:`icml26.cfgmp.sample` takes. The constructors below
give the paper's methods with the official defaults and the baselines:

- :func:`cfg` — plain classifier-free guidance;
- :func:`cfg_mp` — CFG-MP: K Picard iterations of the projection operator while
  ``t < interval``, then the CFG step (paper; ``enable_anderson=False`` in the code);
- :func:`cfg_mp_plus` — CFG-MP+: the same with Anderson acceleration (window 1,
  damping 1, ridge 1e-4: ``enable_anderson=True``);
- :func:`cfg_zero_star`, :func:`apg`, :func:`guidance_interval` — further baselines.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from icml26.cfgmp.anderson import AndersonSolver
from icml26.cfgmp.baselines import APG, CFG, CFGZeroStar, GuidanceInterval
from icml26.cfgmp.projection import ManifoldProjection, Operator

__all__ = [
    "Guider",
    "apg",
    "cfg",
    "cfg_mp",
    "cfg_mp_plus",
    "cfg_zero_star",
    "guidance_interval",
]


@dataclass(frozen=True)
class Guider:
    """A guidance ``rule`` (CFG, CFG-Zero*, APG, ...) and an optional ``projection``."""

    rule: Any
    projection: ManifoldProjection | None = None
    name: str = ""

    def __post_init__(self) -> None:
        for attr in ("mode", "init_state", "combine"):
            if not callable(getattr(self.rule, attr, None)):
                raise TypeError(f"a guidance rule needs a {attr}() method; got {self.rule!r}")
        if self.projection is not None and not isinstance(self.projection, ManifoldProjection):
            raise TypeError(
                f"projection must be a ManifoldProjection, got {type(self.projection).__name__}"
            )

    @property
    def scale(self) -> float:
        return float(self.rule.scale)

    def with_scale(self, scale: float) -> Guider:
        """The same guider at another guidance scale."""
        return replace(self, rule=replace(self.rule, scale=scale))


def cfg(scale: float) -> Guider:
    """Classifier-free guidance ``v_u + w·(v_c − v_u)``."""
    return Guider(CFG(scale), None, "CFG")


def cfg_mp(
    scale: float,
    iterations: int = 2,
    *,
    interval: float = 0.6,
    operator: Operator = "G",
    tol: float | None = None,
) -> Guider:
    """CFG-MP: Picard manifold projection, then CFG (DiT demo: K = 2, t < 0.6)."""
    proj = ManifoldProjection(
        iterations=iterations, anderson=False, interval=interval, operator=operator, tol=tol
    )
    return Guider(CFG(scale), proj, "CFG-MP")


def cfg_mp_plus(
    scale: float,
    iterations: int = 2,
    *,
    window: int = 1,
    damping: float = 1.0,
    ridge: float = 1e-4,
    solver: AndersonSolver = "gram",
    interval: float = 0.6,
    operator: Operator = "G",
    tol: float | None = None,
) -> Guider:
    """CFG-MP+: Anderson-accelerated projection (m = 1, β = 1, ridge 1e-4), then CFG."""
    proj = ManifoldProjection(
        iterations=iterations,
        anderson=True,
        window=window,
        damping=damping,
        ridge=ridge,
        solver=solver,
        interval=interval,
        operator=operator,
        tol=tol,
    )
    return Guider(CFG(scale), proj, "CFG-MP+")


def cfg_zero_star(scale: float, zero_init_steps: int = 1) -> Guider:
    """CFG-Zero* (optimised scale, zero-initialised first step)."""
    return Guider(CFGZeroStar(scale, zero_init_steps=zero_init_steps), None, "CFG-Zero*")


def apg(
    scale: float, *, eta: float = 0.0, norm_threshold: float = 0.0, momentum: float = -0.5
) -> Guider:
    """Adaptive projected guidance on the data prediction."""
    rule = APG(scale, eta=eta, norm_threshold=norm_threshold, momentum=momentum)
    return Guider(rule, None, "APG")


def guidance_interval(scale: float, start: float = 0.0, stop: float = 1.0) -> Guider:
    """CFG only for ``start ≤ t < stop``."""
    return Guider(GuidanceInterval(scale, start, stop), None, "CFG-interval")
