"""Trust-region (REPS) segment weights and the temperature λ set by an effective sample size.

The REPS problem max_p E_p[A(τ)] s.t. KL(p ‖ p_D) ≤ ε has the solution
p*(τ) ∝ p_D(τ) exp(A(τ)/λ) (the paper's Section on the target distribution, [read]).
PAWS does not ask the user for ε: it asks for a target effective sample size
n_eff = (Σ w)² / Σ w² of the weights w_i = exp(A_i/λ) and finds λ.

**Reconstructed** (the paper's Algorithm 1 is not available): n_eff rises monotonically
with λ (from 1 as λ → 0 to n as λ → ∞), so λ is found by bisection on log λ until n_eff
is within ``rtol`` of the target; the implied ε = KL(p* ‖ p_D) is reported for the
empirical (uniform) p_D. Weights are computed in the log domain with max A/λ subtracted,
which changes no weighted-MLE optimum and never overflows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Temperature",
    "effective_sample_size",
    "implied_epsilon",
    "log_weights",
    "neff_target",
    "solve_temperature",
]


def _advantages(adv: np.ndarray) -> np.ndarray:
    a = np.asarray(adv, dtype=np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("no advantages to weight (empty array)")
    if not np.all(np.isfinite(a)):
        raise ValueError("advantages contain NaN or inf")
    return a


def log_weights(adv: np.ndarray, lam: float) -> np.ndarray:
    """log w_i = A_i/λ − max_j A_j/λ (so the largest weight is exactly 1)."""
    a = _advantages(adv)
    if not (lam > 0):
        raise ValueError(f"the temperature λ must be positive, got {lam}")
    if math.isinf(lam):
        return np.zeros_like(a)
    z = a / lam
    return z - z.max()


def _logsumexp(x: np.ndarray) -> float:
    m = float(np.max(x))
    return m + math.log(float(np.sum(np.exp(x - m))))


def effective_sample_size(logw: np.ndarray) -> float:
    """n_eff = (Σ w)² / Σ w², from log weights (computed in the log domain)."""
    lw = np.asarray(logw, dtype=np.float64).reshape(-1)
    return math.exp(2 * _logsumexp(lw) - _logsumexp(2 * lw))


def implied_epsilon(logw: np.ndarray) -> float:
    """KL(p* ‖ p_D) for p*_i = w_i / Σ w and the uniform empirical p_D = 1/n."""
    lw = np.asarray(logw, dtype=np.float64).reshape(-1)
    logp = lw - _logsumexp(lw)
    p = np.exp(logp)
    return float(np.sum(p * (logp + math.log(lw.size))))


@dataclass(frozen=True)
class Temperature:
    """The solved temperature: λ, the achieved n_eff (and its target), the implied ε,
    the normalised weights (mean 1) and the bisection's iteration count."""

    lam: float
    n_eff: float
    target: float
    epsilon: float
    weights: np.ndarray = field(repr=False)
    iterations: int = 0

    @property
    def n_eff_fraction(self) -> float:
        return self.n_eff / self.weights.size


def solve_temperature(
    adv: np.ndarray,
    target: float,
    *,
    rtol: float = 0.01,
    max_iter: int = 200,
) -> Temperature:
    """λ such that the weights exp(A/λ) have n_eff = ``target`` (a count, 1 ≤ target ≤ n).

    Bisection on log λ between brackets that are widened until they hold the target.
    When all advantages are equal the weights are uniform for every λ (n_eff = n) and
    λ = inf is returned.
    """
    a = _advantages(adv)
    n = a.size
    target = float(target)
    if not (1.0 <= target <= n):
        raise ValueError(
            f"the n_eff target must lie in [1, {n}] (the number of weights), got {target}"
        )
    spread = float(a.max() - a.min())
    if spread == 0.0 or target == n:
        return Temperature(math.inf, float(n), target, 0.0, np.ones(n), 0)

    def neff(log_lam: float) -> float:
        return effective_sample_size(log_weights(a, math.exp(log_lam)))

    scale = math.log(spread)
    lo, hi = scale - 5.0, scale + 5.0
    while neff(lo) > target and lo > scale - 200:
        lo -= 5.0
    while neff(hi) < target and hi < scale + 200:
        hi += 5.0
    it, mid = 0, 0.5 * (lo + hi)
    for it in range(1, max_iter + 1):  # noqa: B007
        mid = 0.5 * (lo + hi)
        value = neff(mid)
        if abs(value - target) <= rtol * target:
            break
        if value < target:
            lo = mid
        else:
            hi = mid
    lam = math.exp(mid)
    lw = log_weights(a, lam)
    w = np.exp(lw)
    return Temperature(
        lam=lam,
        n_eff=effective_sample_size(lw),
        target=target,
        epsilon=implied_epsilon(lw),
        weights=w / w.mean(),
        iterations=it,
    )


def neff_target(fraction: float, reference: int) -> float:
    """The n_eff target as a fraction in (0, 1] of a reference count (the number of
    preferences, as the paper's "with 500 preferences … about 50 preferred segments")."""
    if isinstance(fraction, bool) or not isinstance(fraction, int | float):
        raise TypeError(f"the n_eff target must be a number, got {type(fraction).__name__}")
    if not (0.0 < fraction <= 1.0):
        raise ValueError(f"the n_eff target fraction must lie in (0, 1], got {fraction}")
    return max(1.0, fraction * reference)
