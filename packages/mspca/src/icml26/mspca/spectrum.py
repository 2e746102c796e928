"""The spectral map of spiked sample covariances with mean shifts (Theorem 3.5).

For X̃ = Σ^{1/2}Z + A with d/n → c, the outlier eigenvalues of S̃ = X̃X̃ᵀ/n sit at
g(ℓ_k) for the covariance spikes ℓ_k and at g(θ_i²) for the mean shifts of strength
θ_i² = π_i‖m_i‖², with the same map

    g(s) = (1 + s)(s + c) / s = 1 + s + c(1 + s)/s,

visible only above the BBP threshold s > √c; below it the eigenvalue sticks to the
bulk edge (1 + √c)². Outliers fluctuate at n^{-1/2}.

References:
    M. Li, Z. Li, J. Yao. Mean-Shift PCA by Knockoff Mean. ICML 2026, arXiv:2605.25460.
"""

from __future__ import annotations

from functools import lru_cache

import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike


def _check_c(c: float) -> None:
    if isinstance(c, int | float) and not c > 0:
        raise ValueError(f"the aspect ratio c = d/n must be positive, got {c}")


def bbp_threshold(c: float) -> jnp.ndarray:
    """√c: the smallest spike strength that separates from the bulk."""
    _check_c(c)
    return jnp.sqrt(jnp.asarray(c, dtype=float))


def bulk_edge(c: float) -> jnp.ndarray:
    """(1 + √c)²: the right edge of the Marchenko–Pastur bulk (unit noise variance)."""
    _check_c(c)
    return (1.0 + jnp.sqrt(jnp.asarray(c, dtype=float))) ** 2


def spike_location(s: ArrayLike, c: float) -> jnp.ndarray:
    """g(s) = (1+s)(s+c)/s for supercritical s > √c, and the bulk edge below it."""
    _check_c(c)
    s = jnp.asarray(s, dtype=float)
    edge = (1.0 + jnp.sqrt(c)) ** 2
    safe = jnp.maximum(s, jnp.sqrt(c))
    return jnp.where(s > jnp.sqrt(c), (1.0 + safe) * (safe + c) / safe, edge)


def spike_strength(eigenvalue: ArrayLike, c: float) -> jnp.ndarray:
    """g⁻¹(λ): the larger root of s² + (1 + c − λ)s + c = 0.

    An eigenvalue at or below the bulk edge reveals no spike; it maps to the BBP
    threshold √c (the official code takes |discriminant| instead, which is not a
    root of anything).
    """
    _check_c(c)
    lam = jnp.asarray(eigenvalue, dtype=float)
    b = lam - 1.0 - c
    disc = jnp.maximum(b * b - 4.0 * c, 0.0)
    root = 0.5 * (b + jnp.sqrt(disc))
    return jnp.where(lam > (1.0 + jnp.sqrt(c)) ** 2, root, jnp.sqrt(c))


def official_spike_strength(singular_value: ArrayLike, c: float) -> jnp.ndarray:
    """The official code's ``estimate_theta_square``, fed a *singular value* s̃₁.

    It solves s² + (1 + c − x)s + c = 0 at x = s̃₁ with the absolute value of the
    discriminant, ((x − 1 − c) + sqrt|(1 + c − x)² − 4c|)/2. A singular value sits far
    below the bulk edge of the eigenvalues, so the discriminant is negative and the
    result is no root of anything; at c = 0.9 and s̃₁ ≈ 2.44 it gives ≈ 1.18, and the
    official knockoff strength θ'² = 4·(that) ≈ 4.7.
    """
    _check_c(c)
    x = jnp.asarray(singular_value, dtype=float)
    disc = (c + 1.0 - x) ** 2 - 4.0 * c
    return 0.5 * ((x - c - 1.0) + jnp.sqrt(jnp.abs(disc)))


# --- The Marchenko–Pastur bulk, for the noise level --------------------------------


def _mp_grid(c: float, points: int = 4001) -> tuple[np.ndarray, np.ndarray]:
    """(x, F(x)): the CDF of the Marchenko–Pastur law of ratio c ≤ 1, unit variance.

    With x = (a + b)/2 − (b − a)/2·cos t the density sqrt((b − x)(x − a))/(2πcx) dx
    becomes ((b − a)/2)² sin²t/(2πc·x) dt, smooth on [0, π]: the trapezoid rule on
    this grid is accurate to about 1e-7.
    """
    a, b = (1.0 - np.sqrt(c)) ** 2, (1.0 + np.sqrt(c)) ** 2
    t = np.linspace(0.0, np.pi, points)
    x = 0.5 * (a + b) - 0.5 * (b - a) * np.cos(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        dens = (0.5 * (b - a)) ** 2 * np.sin(t) ** 2 / (2.0 * np.pi * c * x)
    # t = 0: zero when a > 0; at c = 1 (a = 0) sin²t/(1 − cos t) → 2, so b/(2πc)
    dens[0] = 0.0 if a > 0 else b / (2.0 * np.pi * c)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(t))])
    return x, cdf / cdf[-1]


@lru_cache(maxsize=64)
def mp_table(c: float) -> tuple[np.ndarray, np.ndarray]:
    """CDF of the *nonzero* eigenvalues of XXᵀ/n for a d × n matrix of unit-variance
    noise with d/n = c, as (x, F(x)) on a grid. For c > 1 the nonzero eigenvalues are
    those of XᵀX/n = c·(XᵀX/d), the law of ratio 1/c scaled by c."""
    if not c > 0:
        raise ValueError(f"the aspect ratio c = d/n must be positive, got {c}")
    if c <= 1.0:
        return _mp_grid(c)
    x, cdf = _mp_grid(1.0 / c)
    return c * x, cdf


def mp_median(c: float) -> float:
    """Median of the nonzero eigenvalues of XXᵀ/n under unit-variance noise (ratio c)."""
    x, cdf = mp_table(float(c))
    return float(np.interp(0.5, cdf, x))
