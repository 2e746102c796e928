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

import jax.numpy as jnp
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
