"""Privacy accounting of full-batch noisy gradient descent.

One step releases the mean gradient plus N(0, σ_dp² I). With per-example gradients of norm
at most Δ (clipped: Δ = C) the sum has sensitivity Δ under adding or removing one example
(the neighbouring relation of opacus and dp-accounting), so a step is a Gaussian mechanism
of noise multiplier z = n σ_dp / Δ, and T full-batch steps (sampling rate 1) are its
T-fold composition. That composition has closed forms:

- zCDP (Bun & Steinke 2016): ρ = T / (2 z²) = T Δ² / (2 n² σ_dp²); Rényi DP of every order
  α is ε_α = α ρ, converted to (ε, δ) with the conversion of Canonne, Kamath & Steinke
  (2020), min_α ε_α + log((α − 1)/α) − (log δ + log α)/(α − 1), as RDP accountants do;
- exact: the composition is μ-Gaussian DP with μ = √T / z (Dong, Roth & Su 2022), whose
  tight (ε, δ) curve is δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018).

:func:`noise_multiplier` calibrates z to a target (ε, δ, T) on the exact curve; the
libraries (:func:`library_epsilons`) are measured against both closed forms.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, special

__all__ = [
    "check_delta",
    "check_epsilon",
    "check_steps",
    "gaussian_delta",
    "gaussian_epsilon",
    "library_epsilons",
    "noise_multiplier",
    "opacus_noise_multiplier",
    "rdp_epsilon",
    "zcdp_epsilon",
    "zcdp_rho",
]

RDP_ORDERS = np.concatenate([np.linspace(1.01, 8, 700), np.arange(8, 1025, 0.25)])


def check_epsilon(epsilon: float) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float | np.floating):
        raise TypeError(f"epsilon must be a number, got {type(epsilon).__name__}")
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be positive and finite, got {epsilon}")
    return float(epsilon)


def check_delta(delta: float) -> float:
    if isinstance(delta, bool) or not isinstance(delta, int | float | np.floating):
        raise TypeError(f"delta must be a number, got {type(delta).__name__}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return float(delta)


def check_steps(steps: int) -> int:
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer):
        raise TypeError(f"steps T must be an int, got {type(steps).__name__}")
    if steps < 1:
        raise ValueError(f"steps T must be at least 1, got {steps}")
    return int(steps)


def _check_z(z: float) -> float:
    if isinstance(z, bool) or not isinstance(z, int | float | np.floating):
        raise TypeError(f"noise multiplier must be a number, got {type(z).__name__}")
    if not math.isfinite(z) or z <= 0:
        raise ValueError(f"noise multiplier must be positive and finite, got {z}")
    return float(z)


def zcdp_rho(z: float, steps: int) -> float:
    """ρ = T / (2 z²) of T Gaussian steps of noise multiplier z."""
    return check_steps(steps) / (2 * _check_z(z) ** 2)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε = ρ + 2 √(ρ log(1/δ)) (Bun & Steinke 2016, Proposition 1.3): simple, loose."""
    return rho + 2 * math.sqrt(rho * math.log(1 / check_delta(delta)))


def rdp_epsilon(z: float, steps: int, delta: float, orders: np.ndarray = RDP_ORDERS) -> float:
    """(ε, δ) from ε_α = α T / (2 z²) with the Canonne–Kamath–Steinke conversion."""
    rho, delta = zcdp_rho(z, steps), check_delta(delta)
    a = np.asarray(orders, dtype=float)
    eps = a * rho + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)
    return float(max(eps.min(), 0.0))


def _log_gaussian_delta(eps: float, mu: float) -> float:
    # log[Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)], stable for large ε via log_ndtr
    a = special.log_ndtr(-eps / mu + mu / 2)
    b = eps + special.log_ndtr(-eps / mu - mu / 2)
    return float(a + np.log1p(-np.exp(min(b - a, 0.0)))) if b < a else -np.inf


def gaussian_delta(epsilon: float, z: float, steps: int) -> float:
    """The exact δ(ε) of T full-batch Gaussian steps of noise multiplier z (μ-GDP)."""
    mu = math.sqrt(check_steps(steps)) / _check_z(z)
    if isinstance(epsilon, bool) or not math.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be a non-negative number, got {epsilon}")
    return float(math.exp(_log_gaussian_delta(float(epsilon), mu)))


def gaussian_epsilon(z: float, steps: int, delta: float) -> float:
    """The exact ε at δ of T full-batch Gaussian steps of noise multiplier z."""
    delta = check_delta(delta)
    mu = math.sqrt(check_steps(steps)) / _check_z(z)
    log_delta = math.log(delta)
    if _log_gaussian_delta(0.0, mu) <= log_delta:
        return 0.0
    hi = 1.0
    while _log_gaussian_delta(hi, mu) > log_delta:
        hi *= 2
        if hi > 1e7:
            raise ValueError(f"epsilon is beyond 1e7 at z = {z}, T = {steps}")
    return float(optimize.brentq(lambda e: _log_gaussian_delta(e, mu) - log_delta, 0.0, hi))


def noise_multiplier(epsilon: float, delta: float, steps: int) -> float:
    """The z at which T full-batch Gaussian steps are exactly (ε, δ)-DP."""
    epsilon, delta, steps = check_epsilon(epsilon), check_delta(delta), check_steps(steps)

    def gap(log_z: float) -> float:
        return gaussian_epsilon(math.exp(log_z), steps, delta) - epsilon

    # μ = √T / z between 40 (ε in the hundreds) and 1e-4 (ε ~ 1e-4)
    lo, hi = math.log(math.sqrt(steps) / 40), math.log(math.sqrt(steps) * 1e4)
    if gap(lo) < 0 or gap(hi) > 0:
        raise ValueError(f"epsilon = {epsilon} is outside the calibratable range at T = {steps}")
    return float(math.exp(optimize.brentq(gap, lo, hi, xtol=1e-12, rtol=1e-10)))


# -- the libraries ----------------------------------------------------------------------------
def _dp_accounting(kind: str) -> Callable[[float, int, float], float]:
    def run(z: float, steps: int, delta: float) -> float:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
        from dp_accounting.rdp import rdp_privacy_accountant

        if kind == "rdp":
            acc = rdp_privacy_accountant.RdpAccountant()
        else:
            acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), steps))
        return float(acc.get_epsilon(delta))

    return run


def _prv(z: float, steps: int, delta: float) -> float:
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

    prv = PoissonSubsampledGaussianMechanism(sampling_probability=1.0, noise_multiplier=z)
    acc = PRVAccountant(
        prvs=[prv], max_self_compositions=[steps], eps_error=1e-2, delta_error=delta * 1e-3
    )
    _, estimate, _ = acc.compute_epsilon(delta=delta, num_self_compositions=[steps])
    return float(estimate)


def _opacus(kind: str) -> Callable[[float, int, float], float]:
    def run(z: float, steps: int, delta: float) -> float:
        from opacus.accountants import PRVAccountant, RDPAccountant

        acc = RDPAccountant() if kind == "rdp" else PRVAccountant()
        acc.history = [(z, 1.0, steps)]
        return float(acc.get_epsilon(delta))

    return run


LIBRARIES: dict[str, Callable[[float, int, float], float]] = {
    "dp_accounting RDP": _dp_accounting("rdp"),
    "dp_accounting PLD": _dp_accounting("pld"),
    "prv_accountant PRV": _prv,
    "opacus RDP": _opacus("rdp"),
}


def library_epsilons(z: float, steps: int, delta: float) -> dict[str, float | str]:
    """ε of T full-batch Gaussian steps from each installed accountant; a library that is
    missing or fails is reported by its error message instead of a number."""
    z, steps, delta = _check_z(z), check_steps(steps), check_delta(delta)
    out: dict[str, float | str] = {}
    for name, fn in LIBRARIES.items():
        try:
            out[name] = fn(z, steps, delta)
        except ImportError as err:
            out[name] = f"not installed ({err.name})"
        except Exception as err:  # a library failure is data, not a crash
            out[name] = f"{type(err).__name__}: {err}"
    return out


def opacus_noise_multiplier(
    epsilon: float, delta: float, steps: int, accountant: str = "rdp"
) -> float:
    """opacus's ``get_noise_multiplier`` at sampling rate 1 (needs opacus)."""
    from opacus.accountants.utils import get_noise_multiplier

    return float(
        get_noise_multiplier(
            target_epsilon=check_epsilon(epsilon),
            target_delta=check_delta(delta),
            sample_rate=1.0,
            steps=check_steps(steps),
            accountant=accountant,
            epsilon_tolerance=1e-4,
        )
    )
