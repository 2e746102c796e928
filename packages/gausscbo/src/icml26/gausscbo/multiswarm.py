"""Multi-swarm Gaussian CBO: fitting a Gaussian mixture (Appendix E, Algorithm 2).

n_S swarms of N Gaussian particles each. Swarm ℓ minimises the KL of the mixture in
which its candidate ν replaces its own barycenter:

    E^ℓ(ν) = KL( (1/n_S) ν + (1/n_S) Σ_{h≠ℓ} μ̄^h ‖ μ_targ ).

(The appendix prints the weight of the other swarms as 1/(n_S − 1), which does not
sum to one with 1/n_S; we use 1/n_S, which matches the output mixture
(1/n_S) Σ_ℓ μ̄^ℓ — reconstructed.) As in Algorithm 2 the swarms are visited in turn
within a step: swarm ℓ's objective uses the barycenters already updated for h < ℓ.
Barycenters start unweighted. Each swarm then takes the single-swarm CBO step towards
its own consensus.

The mixture KL uses the objective's quadrature per component:
KL(q ‖ p) = Σ_c π_c E_{N_c}[log q(X) − log p(X)].
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from icml26.gausscbo.cbo import (
    _init,
    _key_data,
    _positive_int,
    _real,
    _threefry,
    anisotropic_noise,
    cbo_update,
    consensus_point,
    run_invariant_jit,
)
from icml26.gausscbo.lbw import LBWSpace
from icml26.gausscbo.objectives import KLDivergence
from icml26.gausscbo.precision import with_float64
from icml26.shared.sharding import map_trials, pad_trials, padded_count, trial_mesh

__all__ = ["MultiSwarmResult", "mixture_kl", "multi_swarm_cbo"]


def _log_normal(x: jax.Array, m: jax.Array, chol: jax.Array) -> jax.Array:
    y = jax.scipy.linalg.solve_triangular(chol, x - m, lower=True)
    d = m.shape[-1]
    return -0.5 * y @ y - jnp.sum(jnp.log(jnp.diagonal(chol))) - 0.5 * d * jnp.log(2 * jnp.pi)


def mixture_kl(kl: KLDivergence, means: jax.Array, covs: jax.Array) -> jax.Array:
    """KL((1/C) Σ_c N(m_c, Σ_c) ‖ μ_targ) for means (C, d), covs (C, d, d), equal weights.

    A singular component gives ``kl.penalty``.
    """
    c = means.shape[0]
    covs = 0.5 * (covs + jnp.swapaxes(covs, -1, -2))
    chols = jnp.linalg.cholesky(covs)
    scale = jnp.maximum(1.0, jnp.max(jnp.diagonal(covs, axis1=-2, axis2=-1)))
    piv = jnp.diagonal(chols, axis1=-2, axis2=-1)
    ok = jnp.all(jnp.isfinite(chols)) & (jnp.min(piv) ** 2 > kl.singular_tol * scale)
    chols = jnp.where(ok, chols, jnp.eye(means.shape[-1], dtype=means.dtype))

    def log_q(x):
        comps = jax.vmap(lambda m, l: _log_normal(x, m, l))(means, chols)
        return logsumexp(comps) - jnp.log(c)

    def integrand(x):
        return log_q(x) - kl.log_density(x)

    per_comp = jax.vmap(lambda m, l: kl.expectation(integrand, m, l))(means, chols)
    value = jnp.mean(per_comp)
    value = jnp.where(jnp.isfinite(value), value, kl.penalty)
    return jnp.where(ok, value, kl.penalty)


@dataclass(frozen=True)
class MultiSwarmResult:
    """``times`` (K,); the barycenters ``means`` (R, K, S, d), ``covs`` (R, K, S, d, d) and
    the KL of their equal-weight mixture ``energy`` (R, K)."""

    times: np.ndarray
    means: np.ndarray
    covs: np.ndarray
    energy: np.ndarray

    @property
    def final_energy(self) -> np.ndarray:
        return self.energy[:, -1]


@partial(run_invariant_jit, static_argnames=("n_swarms", "n_particles", "steps"))
def _multi_batch(key_data, ids, m0, t0, kl, space, hyper, *, n_swarms, n_particles, steps):
    """Every run r from its own stream ``fold_in(key, ids[r])`` (threefry: the same
    under ``vmap``, in any batch and on any device)."""
    alpha, lam, sigma, dt, spread = hyper

    def swarm_energies(z_l, bar_m, bar_s, ell):
        """E^ℓ for every particle of swarm ℓ (others fixed at their barycenters)."""
        m, s = space.gaussian(z_l)

        def one(mi, si):
            return mixture_kl(kl, bar_m.at[ell].set(mi), bar_s.at[ell].set(si))

        return jax.vmap(one)(m, s)

    def consensus_all(z, bar_m, bar_s):
        def visit(ell, carry):
            bar_m, bar_s, z_bars = carry
            z_l = z[ell]
            e = swarm_energies(z_l, bar_m, bar_s, ell)
            z_bar = consensus_point(z_l, e, alpha)
            mb, sb = space.gaussian(z_bar)
            return bar_m.at[ell].set(mb), bar_s.at[ell].set(sb), z_bars.at[ell].set(z_bar)

        init = (bar_m, bar_s, jnp.zeros(z.shape[::2], z.dtype))
        return jax.lax.fori_loop(0, n_swarms, visit, init)

    def one_run(data_r, id_r, m0_r, t0_r):
        key = jax.random.fold_in(_threefry(data_r), id_r)
        k_init, k_loop = jax.random.split(key)
        init_keys = jax.random.split(k_init, n_swarms)
        z = jax.vmap(lambda k, m, t: _init(k, m, t, space, n_particles, spread))(
            init_keys, m0_r, t0_r
        )
        bar_m, bar_s = space.gaussian(jnp.mean(z, axis=1))  # unweighted, step 1

        def body(carry, k):
            z, bar_m, bar_s = carry
            bar_m, bar_s, z_bars = consensus_all(z, bar_m, bar_s)
            noise = anisotropic_noise(jax.random.fold_in(k_loop, k), z_bars[:, None, :] - z)
            z = cbo_update(z, z_bars[:, None, :], noise, lam=lam, sigma=sigma, dt=dt)
            return (z, bar_m, bar_s), (bar_m, bar_s)

        carry, (ms, ss) = jax.lax.scan(body, (z, bar_m, bar_s), jnp.arange(steps))
        z, bar_m, bar_s = carry
        bar_m, bar_s, _ = consensus_all(z, bar_m, bar_s)
        ms = jnp.concatenate([ms, bar_m[None]])
        ss = jnp.concatenate([ss, bar_s[None]])
        return ms, ss, jax.vmap(lambda a, b: mixture_kl(kl, a, b))(ms, ss)

    return jax.vmap(one_run)(key_data, ids, m0, t0)


@with_float64
def multi_swarm_cbo(
    kl: KLDivergence,
    key: jax.Array,
    m0: object,
    *,
    n_swarms: int = 4,
    n_particles: int = 10,
    steps: int = 200,
    alpha: float = 1e4,
    lam: float = 1.0,
    sigma: float = 5.0,
    dt: float = 0.05,
    init_spread: float = 0.1,
    devices: object = None,
) -> MultiSwarmResult:
    """Run Algorithm 2 from swarm starts ``m0`` (R, n_S, d) (Σ0 = I, reference I).

    Defaults are the appendix's: n_S = 4 swarms of N = 10 particles, the d = 2
    single-swarm parameters otherwise. Run r draws from its own stream
    ``fold_in(key, r)``, so its result does not depend on the batch or the device.
    ``devices`` (``None``: every local device; a count; a list of ``jax.Device``)
    shards the runs over a ``Mesh`` on the run axis; ``devices=1`` is the one-device
    program.
    """
    if not isinstance(kl, KLDivergence):
        raise TypeError(f"multi_swarm_cbo needs a KLDivergence objective, got {type(kl)}")
    n_swarms = _positive_int(n_swarms, "n_swarms")
    n_particles = _positive_int(n_particles, "n_particles")
    steps = _positive_int(steps, "steps")
    if n_swarms < 2:
        raise ValueError(f"n_swarms must be at least 2, got {n_swarms}")
    for name, value in (("alpha", alpha), ("lam", lam), ("dt", dt)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be positive and finite, got {value}")
    if not (np.isfinite(sigma) and sigma >= 0) or not (
        np.isfinite(init_spread) and init_spread >= 0
    ):
        raise ValueError(f"sigma and init_spread must be >= 0, got {sigma}, {init_spread}")
    d = kl.d
    m = _real(m0, "m0")  # NaN/inf or complex starts are an error, not a 1e4 energy
    if m.ndim == 2:
        m = m[None]
    if m.shape[1:] != (n_swarms, d):
        raise ValueError(f"m0 must have shape (runs, {n_swarms}, {d}), got {np.shape(m0)}")
    space = LBWSpace.create(d=d)
    hyper = tuple(jnp.asarray(v) for v in (alpha, lam, sigma, dt, init_spread))
    data = _key_data(key)
    if data.shape != (2,):
        raise ValueError(f"key must be one JAX PRNG key, got an array of shape {data.shape[:-1]}")
    runs = m.shape[0]
    per_run = (
        np.broadcast_to(data, (runs, 2)),
        np.arange(runs, dtype=np.uint32),
        m,
        np.zeros((*m.shape, d)),
    )  # fmt: skip  (log_I(I) = 0)
    program = partial(_multi_batch, n_swarms=int(n_swarms), n_particles=int(n_particles),
                      steps=int(steps))  # fmt: skip
    mesh = trial_mesh(devices)
    if mesh is None:
        ms, ss, e = program(*per_run, kl, space, hyper)
    else:
        padded = pad_trials(per_run, padded_count(runs, mesh))
        out = map_trials(program, mesh, padded, (kl, space, hyper))
        ms, ss, e = jax.tree.map(lambda a: a[:runs], out)
    return MultiSwarmResult(
        np.arange(steps + 1) * dt, np.asarray(ms), np.asarray(ss), np.asarray(e)
    )
