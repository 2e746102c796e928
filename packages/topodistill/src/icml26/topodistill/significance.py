"""Is a cross-map skill evidence of causation? Convergence plus a surrogate test.

Skill at one library size is not CCM (Sugihara et al. 2012): a link ``cause → effect``
is accepted when cross-mapping ``cause`` from the manifold of ``effect``

1. converges: ``ρ(L_max) − ρ(L_min) > min_convergence``, and
2. beats surrogates of the cause: ``p = (1 + #{ρ_surr ≥ ρ}) / (1 + n_surr) < α``,
   where ``ρ_surr`` is the skill at ``L_max`` for a surrogate of the cause cross-mapped
   from the same manifold with the same library subsamples.

The manifold is fixed under the null and only the target is replaced, so the
surrogate skills reuse the neighbour search (:func:`cross_map` takes many targets).
The same test serves delay-embedding CCM and the learned TopoDistill manifolds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml26.topodistill.ccm import CCMResult, cross_map, library_sizes
from icml26.topodistill.embedding import check_series
from icml26.topodistill.surrogates import make_surrogates

__all__ = ["CausalTest", "cross_map_significance"]


@dataclass(frozen=True)
class CausalTest:
    """The verdict on one directed link, with the numbers behind it."""

    curve: CCMResult
    surrogate_skill: np.ndarray  # (n_surrogates,) mean ρ at L_max
    p_value: float
    convergent: bool
    causal: bool
    surrogate: str
    alpha: float

    @property
    def skill(self) -> float:
        """ρ at the largest library."""
        return self.curve.final_skill

    def as_dict(self) -> dict:
        return {
            **self.curve.as_dict(),
            "skill": self.skill,
            "convergence": self.curve.convergence,
            "p_value": self.p_value,
            "convergent": self.convergent,
            "causal": self.causal,
            "surrogate": self.surrogate,
            "surrogate_mean": float(np.mean(self.surrogate_skill)),
        }


def cross_map_significance(
    manifold: np.ndarray | torch.Tensor,
    target: np.ndarray,
    *,
    lib_sizes: Sequence[int] | np.ndarray | None = None,
    samples: int = 50,
    k: int | None = None,
    exclusion_radius: int = 0,
    times: np.ndarray | None = None,
    surrogate: str = "random_phase",
    n_surrogates: int = 99,
    surrogate_options: dict | None = None,
    alpha: float = 0.05,
    min_convergence: float = 0.0,
    rng: np.random.Generator,
    device: torch.device | str | None = None,
    label: str = "effect:cause",
    E: int | None = None,
    tau: int = 1,
) -> CausalTest:
    """Test ``cause → effect`` from the manifold of the effect and the cause's series.

    ``manifold`` (M, D) and ``target`` (M,) are aligned row by row over consecutive
    times; the surrogates are drawn from ``target`` itself. ``surrogate`` names one of
    :data:`~icml26.topodistill.surrogates.SURROGATES`; ``n_surrogates = 0`` skips the
    test (p = NaN, decided on convergence alone).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    target = check_series(target, "target (the putative cause)", min_length=4, varying=True)
    m = target.shape[0]
    sizes = library_sizes(m) if lib_sizes is None else np.asarray(lib_sizes, dtype=int)
    surr = (
        make_surrogates(surrogate, target, n_surrogates, rng, **(surrogate_options or {}))
        if n_surrogates > 0
        else np.empty((0, m))
    )
    curve_skill = cross_map(
        manifold,
        target,
        sizes,
        samples=samples,
        k=k,
        exclusion_radius=exclusion_radius,
        times=times,
        rng=rng,
        device=device,
    )[..., 0]
    dim = int(np.asarray(manifold.shape)[1])
    curve = CCMResult(
        lib_sizes=sizes,
        skill=curve_skill,
        E=E or dim,
        tau=tau,
        k=dim + 1 if k is None else int(k),
        exclusion_radius=exclusion_radius,
        label=label,
    )
    rho = curve.final_skill
    if n_surrogates > 0:
        # the null at L_max only: same manifold, surrogate targets, fresh subsamples
        null = cross_map(
            manifold,
            surr,
            sizes[-1:],
            samples=1 if sizes[-1] >= m else samples,
            k=k,
            exclusion_radius=exclusion_radius,
            times=times,
            rng=rng,
            device=device,
        )
        null_skill = np.nanmean(null[0], axis=0)
        p = float((1 + np.sum(null_skill >= rho)) / (1 + n_surrogates))
    else:
        null_skill, p = np.empty(0), float("nan")
    convergent = curve.convergence > min_convergence
    causal = bool(convergent and (n_surrogates == 0 or p < alpha))
    return CausalTest(curve, null_skill, p, bool(convergent), causal, surrogate, alpha)
