"""The paper's data model: a spiked covariance plus mean-shifted sub-populations.

    X̃ = X + A,   X = Σ^{1/2} Z,   Σ = I + Σ_k ℓ_k v_k v_kᵀ,   A = Σ_i m_(i) γ_(i)ᵀ

Z has i.i.d. N(0, 1) entries; v_k and the directions of m_(i) are Haar (independent
normalised Gaussians, as in the official code); γ_(i) ∈ {0, 1}ⁿ is i.i.d.
Bernoulli(π_i), so the mean spike has strength θ_i² = π_i‖m_(i)‖². Matrices are
d × n with samples as columns, as in the paper.

The optional ``cov_shift`` reproduces the mixed contamination of the official
``rebuttal2`` experiment: contaminated columns are also multiplied by
Σ₂^{1/2}, Σ₂ = I + s√c·uuᵀ with a fresh Haar direction u (reconstructed from the
brief's description of that script).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Sample(NamedTuple):
    """One draw of the model (all d × n matrices have samples as columns)."""

    x_tilde: jax.Array  # (d, n) observed, contaminated data
    x_clean: jax.Array  # (d, n) X without the mean shift (the metric's reference)
    spike_directions: jax.Array  # (d, K) population covariance spikes v_k
    shift_directions: jax.Array  # (d, M) unit directions of the mean shifts m_(i)
    masks: jax.Array  # (M, n) contamination indicators γ_(i)


def _haar(key: jax.Array, d: int, k: int) -> jax.Array:
    g = jax.random.normal(key, (d, k))
    return g / jnp.linalg.norm(g, axis=0, keepdims=True)


def _sqrt_spiked(z: jax.Array, q: jax.Array, strengths: jax.Array) -> jax.Array:
    """Σ^{1/2} z for Σ = I + Σ ℓ_k q_k q_kᵀ with orthonormal q_k, without forming Σ."""
    return z + q @ ((jnp.sqrt(1.0 + strengths) - 1.0)[:, None] * (q.T @ z))


def _check_model(d, n, spikes, shift_norms, shift_fractions, cov_shift) -> None:
    """Clear errors for impossible model parameters (skipped for traced values)."""
    for name, v in (("d", d), ("n", n)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    checks = (
        ("spikes (covariance spike strengths ℓ)", spikes, lambda a: a >= 0, "≥ 0"),
        ("shift_norms (‖m‖)", shift_norms, lambda a: a >= 0, "≥ 0"),
        ("shift_fractions (π)", shift_fractions, lambda a: (a >= 0) & (a <= 1), "in [0, 1]"),
        ("cov_shift (s)", cov_shift, lambda a: a >= 0, "≥ 0"),
    )
    for name, value, ok, want in checks:
        if isinstance(value, jax.core.Tracer):
            continue
        a = np.atleast_1d(np.asarray(value, dtype=float))
        if a.ndim != 1:
            raise ValueError(f"{name} must be a scalar or 1-D, got shape {a.shape}")
        if not np.all(np.isfinite(a)) or not np.all(ok(a)):
            raise ValueError(f"{name} must be finite and {want}, got {a.tolist()}")
    if not any(isinstance(v, jax.core.Tracer) for v in (shift_norms, shift_fractions)):
        m, p = np.atleast_1d(shift_norms).shape[0], np.atleast_1d(shift_fractions).shape[0]
        if m != p:
            raise ValueError(f"one fraction per mean shift: {m} norms, {p} fractions")


def simulate(
    key: jax.Array,
    d: int,
    n: int,
    spikes: jax.Array,
    shift_norms: jax.Array,
    shift_fractions: jax.Array,
    cov_shift: float | jax.Array = 0.0,
) -> Sample:
    """Draw X̃ (d × n) from the mean-shift model.

    Args:
        key: JAX PRNG key.
        d, n: dimension and number of samples (static).
        spikes: (K,) covariance spike strengths ℓ_k ≥ 0.
        shift_norms: (M,) mean-shift norms ‖m_(i)‖ (use zeros for no contamination).
        shift_fractions: (M,) mixture weights π_i ∈ [0, 1].
        cov_shift: s ≥ 0; contaminated columns get covariance I + s√c·uuᵀ (0: off).
    """
    _check_model(d, n, spikes, shift_norms, shift_fractions, cov_shift)
    return _simulate(key, d, n, spikes, shift_norms, shift_fractions, cov_shift)


@partial(jax.jit, static_argnames=("d", "n"))
def _simulate(
    key: jax.Array,
    d: int,
    n: int,
    spikes: jax.Array,
    shift_norms: jax.Array,
    shift_fractions: jax.Array,
    cov_shift: float | jax.Array = 0.0,
) -> Sample:
    spikes = jnp.atleast_1d(jnp.asarray(spikes, dtype=float))
    shift_norms = jnp.atleast_1d(jnp.asarray(shift_norms, dtype=float))
    shift_fractions = jnp.atleast_1d(jnp.asarray(shift_fractions, dtype=float))
    k_v, k_z, k_m, k_g, k_u = jax.random.split(key, 5)
    # Orthonormalise the Haar spike directions so that Σ has exactly the spikes ℓ_k
    # (one direction only needs its norm, and skipping QR keeps compilation short).
    v = _haar(k_v, d, spikes.shape[0])
    if spikes.shape[0] > 1:
        v, _ = jnp.linalg.qr(v)
    x = _sqrt_spiked(jax.random.normal(k_z, (d, n)), v, spikes)
    directions = _haar(k_m, d, shift_norms.shape[0])
    masks = jax.random.bernoulli(k_g, shift_fractions[:, None], (shift_norms.shape[0], n))
    masks = masks.astype(x.dtype)
    contaminated = jnp.max(masks, axis=0) > 0
    s = jnp.asarray(cov_shift, dtype=float) * jnp.sqrt(d / n)
    x_cov = _sqrt_spiked(x, _haar(k_u, d, 1), jnp.reshape(s, (1,)))
    x_obs = jnp.where(contaminated[None, :], x_cov, x)
    a = (directions * shift_norms[None, :]) @ masks
    return Sample(x_obs + a, x, v, directions, masks)


def simulate_batch(
    keys: jax.Array,
    d: int,
    n: int,
    spikes: jax.Array,
    shift_norms: jax.Array,
    shift_fractions: jax.Array,
    cov_shift: float | jax.Array = 0.0,
) -> Sample:
    """:func:`simulate` for a batch of keys (one trial each): arrays gain a leading axis."""
    _check_model(d, n, spikes, shift_norms, shift_fractions, cov_shift)
    return _simulate_batch(keys, d, n, spikes, shift_norms, shift_fractions, cov_shift)


@partial(jax.jit, static_argnames=("d", "n"))
def _simulate_batch(keys, d, n, spikes, shift_norms, shift_fractions, cov_shift):
    return jax.vmap(
        lambda key: _simulate(key, d, n, spikes, shift_norms, shift_fractions, cov_shift)
    )(keys)


def paper_shift_norm(c: float, fraction: float, magnitude: float = 2.0) -> float:
    """‖m‖ = magnitude·sqrt(√c/π), the official experiments' choice (θ² = magnitude²·√c)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"the contamination fraction must lie in (0, 1], got {fraction}")
    return float(magnitude * (c**0.5 / fraction) ** 0.5)


def paper_spike(c: float) -> float:
    """ℓ = 2√c: twice the BBP threshold, the official experiments' covariance spike."""
    return float(2.0 * c**0.5)
