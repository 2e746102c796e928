"""Gaussian consensus-based optimization in the LBW space (Section 3, Algorithm 1).

N Gaussian particles μ^i = N(m^i, exp_{Σ⁰}(T^i)) move by the Euler–Maruyama scheme
(eq. cbonum)

    m^i ← m^i + Δt λ (m̄ − m^i) + √Δt σ (m̄ − m^i) ⊙ B^{i,m}
    T^i ← T^i + Δt λ (T̄ − T^i) + √Δt σ (T̄ − T^i) ⊙ B^{i,T}

towards the consensus point, the LBW barycenter with Gibbs weights (eq. consensus)

    ω^i ∝ exp(−α E(μ^i)),   (m̄, T̄) = Σ_i ω^i (m^i, T^i),

where ⊙ is the component-wise product of coefficients in a ⟨·,·⟩_{Σ⁰}-orthonormal basis
of Sym_d and B ~ N(0, I) is drawn afresh for each particle and step. Written in those
coefficients z = (m, c) ∈ R^D, D = d + d(d+1)/2, this *is* anisotropic Euclidean CBO
(Carrillo et al., 2021): particles are stored as z and the update is the plain
Euclidean one. The output is the consensus Gaussian N(m̄, exp_{Σ⁰}(T̄)).

Implementation: one ``lax.scan`` over steps carries all runs (R, N, D); each step
evaluates every particle's energy, the weights and the update of all runs at once, so
nothing returns to the host between steps. Every run has its own random stream: run r
draws its initial particles and its step-k increments from ``fold_in(key_r, ·)`` with
``key_r = fold_in(key, r)`` (threefry, which is the same under ``vmap`` as alone), so run
r's path does not depend on the batch it is in, nor on the device it runs on. The runs
can be sharded over the local devices (:mod:`icml26.shared.sharding`). The program is
``jit``-compiled once per (energy structure, sizes, steps): targets and numeric
hyperparameters are traced inputs, so seeds, targets of one size and σ/α sweeps reuse it.

The optional reference update (Appendix D.2, "base update") re-linearises every
``base_update_every`` steps at the current consensus covariance: each particle's Σ^i
is re-expressed as T^i = log_{Σ̄}(Σ^i) in the new space. The paper found it gives no
benefit (and hurts on target C); it is off by default.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from icml26.gausscbo.lbw import LBWSpace
from icml26.gausscbo.objectives import as_pytree_callable
from icml26.gausscbo.precision import with_float64
from icml26.shared.sharding import map_trials, pad_trials, padded_count, trial_mesh

__all__ = [
    "CBOResult",
    "GaussCBO",
    "anisotropic_noise",
    "cbo_update",
    "consensus_distance",
    "consensus_point",
    "consensus_weights",
    "isotropic_noise",
    "particle_variance",
    "run_keys",
    "standard_normal",
]

log = logging.getLogger(__name__)

Energy = Callable[[jax.Array, jax.Array], jax.Array]
Noise = Callable[[jax.Array, jax.Array], jax.Array]


def consensus_weights(energies: jax.Array, alpha: float) -> jax.Array:
    """ω ∝ exp(−α E), computed as softmax(−α (E − min E)) so α = 10⁴ cannot underflow.

    Non-finite energies get weight 0 (unless every energy is non-finite: then uniform).
    """
    finite = jnp.isfinite(energies)
    e = jnp.where(finite, energies, jnp.inf)
    e_min = jnp.min(e, axis=-1, keepdims=True)
    e_min = jnp.where(jnp.isfinite(e_min), e_min, 0.0)
    logits = jnp.where(finite, -alpha * (e - e_min), -jnp.inf)
    logits = jnp.where(jnp.any(finite, axis=-1, keepdims=True), logits, 0.0)
    return jax.nn.softmax(logits, axis=-1)


def consensus_point(z: jax.Array, energies: jax.Array, alpha: float) -> jax.Array:
    """z̄ = Σ_i ω^i z^i for particles z (…, N, D) and energies (…, N)."""
    w = consensus_weights(energies, alpha)
    return jnp.einsum("...n,...nd->...d", w, z)


def standard_normal(key: jax.Array, shape: tuple[int, ...], dtype) -> jax.Array:
    """ξ ~ N(0, I) drawn in float32 and returned as ``dtype``.

    Drawing the increments is the costliest part of a step on CPU in float64 (the
    inverse-erf transform); float32 draws are ~2× cheaper and their 7 significant
    digits are far below the Euler–Maruyama error. The dynamics stay in ``dtype``.
    """
    return jax.random.normal(key, shape, dtype=jnp.float32).astype(dtype)


def anisotropic_noise(key: jax.Array, diff: jax.Array) -> jax.Array:
    """(z̄ − z) ⊙ ξ, ξ ~ N(0, I): the paper's component-wise multiplicative noise."""
    return diff * standard_normal(key, diff.shape, diff.dtype)


def isotropic_noise(key: jax.Array, diff: jax.Array) -> jax.Array:
    """‖z̄ − z‖ ξ (Pinnau et al., 2017), for comparison; not the paper's choice."""
    norm = jnp.linalg.norm(diff, axis=-1, keepdims=True)
    return norm * standard_normal(key, diff.shape, diff.dtype)


NOISES: dict[str, Noise] = {"anisotropic": anisotropic_noise, "isotropic": isotropic_noise}


def cbo_update(
    z: jax.Array, z_bar: jax.Array, noise: jax.Array, *, lam: float, sigma: float, dt: float
) -> jax.Array:
    """One Euler–Maruyama step (eq. cbonum): z + Δt λ (z̄ − z) + √Δt σ · noise.

    ``noise`` is the noise term already formed from (z̄ − z), e.g. (z̄ − z) ⊙ ξ.
    """
    return z + dt * lam * (z_bar - z) + jnp.sqrt(dt) * sigma * noise


def _key_data(key: object) -> np.ndarray:
    """The key data, (…, 2) uint32, of threefry keys for ``key``: a JAX PRNG key (or an
    array of them, one per run) or a legacy ``PRNGKey``. Keys of another implementation
    (``rbg``) are mapped to threefry keys on the host: threefry draws are the same under
    ``vmap`` as alone, XLA's RngBitGenerator (``rbg``) under ``vmap`` draws every run's
    bits from the first key. No eager JAX op runs here (nothing is compiled)."""
    if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        data = np.asarray(jax.random.key_data(key))
        if data.shape[-1] != 2 or "threefry" not in str(jax.random.key_impl(key)):
            flat = data.reshape(-1, data.shape[-1]).astype(np.uint64)
            words = [
                np.random.default_rng(row.tolist()).integers(0, 2**32, 2, dtype=np.uint64)
                for row in flat
            ]
            data = np.asarray(words, dtype=np.uint64).reshape(*data.shape[:-1], 2)
        return data.astype(np.uint32)
    if isinstance(key, jax.Array | np.ndarray) and key.dtype == np.uint32 and key.shape == (2,):
        return np.asarray(key)  # a legacy PRNGKey
    raise TypeError(
        f"key must be a JAX PRNG key (jax.random.key(seed)) or an array of per-run keys, "
        f"got {key!r}"
    )


def _threefry(data: jax.Array) -> jax.Array:
    return jax.random.wrap_key_data(data, impl="threefry2x32")


@with_float64
def run_keys(key: jax.Array, runs: int) -> jax.Array:
    """The per-run keys of a batch run with ``key``: run r uses ``fold_in(key, r)``.

    ``GaussCBO.run(run_keys(key, R)[i:i + 1], m0[i:i + 1], …)`` repeats run i of
    ``GaussCBO.run(key, m0, …)`` alone, array for array.
    """
    base = _threefry(jnp.asarray(_key_data(key)))
    if base.shape != ():
        raise ValueError(f"run_keys needs one key, got an array of shape {base.shape}")
    return jax.vmap(jax.random.fold_in, (None, 0))(base, jnp.arange(_positive_int(runs, "runs")))


def particle_variance(z: jax.Array) -> jax.Array:
    """(1/N) Σ_i ‖z^i − ⟨z⟩‖², the ensemble's spread in the LBW norm."""
    centred = z - jnp.mean(z, axis=-2, keepdims=True)
    return jnp.mean(jnp.sum(centred**2, axis=-1), axis=-1)


class _State(NamedTuple):
    z: jax.Array
    space: LBWSpace
    key: jax.Array


class _Hyper(NamedTuple):
    """Numeric hyperparameters, traced (a σ or α sweep reuses the compiled code)."""

    alpha: jax.Array
    lam: jax.Array
    sigma: jax.Array
    dt: jax.Array
    spread: jax.Array


@dataclass(frozen=True)
class _Shape:
    """What fixes the compiled program: sizes, loop lengths and the noise function."""

    d: int
    n_particles: int
    steps: int
    every: int
    noise: Noise
    base_update_every: int


def _energies(energy: Energy, space: LBWSpace, z: jax.Array) -> jax.Array:
    """E#(z) = E(N(m, exp_{Σ⁰}(T))) for particles z (…, D)."""
    m, sigma = space.gaussian(z)
    d = space.d
    flat = jax.vmap(energy)(m.reshape(-1, d), sigma.reshape(-1, d, d))
    return flat.reshape(z.shape[:-1])


def _init(key, m0, t0, space: LBWSpace, n: int, spread) -> jax.Array:
    """m^i = m0 + 0.1 ξ^i, T^i = log_{Σ⁰}(Σ0) + 0.1 Ξ^i, Ξ^i symmetric with N(0,1) entries."""
    k_m, k_t = jax.random.split(key)
    d = m0.shape[-1]
    xi = jax.random.normal(k_m, (n, d), dtype=m0.dtype)
    upper = jnp.triu(jax.random.normal(k_t, (n, d, d), dtype=m0.dtype))
    big_xi = upper + jnp.swapaxes(jnp.triu(upper, 1), -1, -2)
    return space.to_z(m0 + spread * xi, t0 + spread * big_xi)


def _step(energy: Energy, hyper: _Hyper, noise: Noise, z, space: LBWSpace, key, energies=None):
    """One step of particles z (…, N, D); ``energies`` overrides E#(z) (batched spaces);
    ``noise(key, z̄ − z)`` forms the noise term (per run, see :func:`_loop`)."""
    e = _energies(energy, space, z) if energies is None else energies
    z_bar = consensus_point(z, e, hyper.alpha)
    diff = z_bar[..., None, :] - z
    z_new = cbo_update(
        z, z_bar[..., None, :], noise(key, diff), lam=hyper.lam, sigma=hyper.sigma, dt=hyper.dt
    )
    return z_new, z_bar


def consensus_distance(z: jax.Array, z_bar: jax.Array) -> jax.Array:
    """Median over particles of ‖z^i − z̄‖ (LBW norm): where the typical particle is.

    Unlike :func:`particle_variance`, a few escaped particles do not dominate it.
    """
    return jnp.median(jnp.linalg.norm(z - z_bar[..., None, :], axis=-1), axis=-1)


def _record(z, z_bar, space: LBWSpace) -> dict:
    m_bar, s_bar = space.gaussian(z_bar)
    return {
        "mean": m_bar,
        "cov": s_bar,
        "variance": particle_variance(z),
        "distance": consensus_distance(z, z_bar),
    }


def _rebase(energy: Energy, hyper: _Hyper, z, space: LBWSpace):
    """Re-linearise at the consensus covariance (when it is positive definite)."""
    z_bar = consensus_point(z, _energies(energy, space, z), hyper.alpha)
    _, s_new = space.gaussian(z_bar)
    ok = jnp.linalg.eigvalsh(s_new)[0] > 1e-8
    new_space = LBWSpace.from_reference(jnp.where(ok, s_new, space.sigma0))
    m, sig = space.gaussian(z)
    z_new = new_space.to_z(m, jax.vmap(new_space.log)(sig))
    return jax.lax.cond(ok, lambda: (z_new, new_space), lambda: (z, space))


def _loop(energy: Energy, hyper: _Hyper, shape: _Shape, space: LBWSpace, keys, z0):
    """All runs z0 (R, N, D) through one ``lax.scan`` over time; each step evaluates
    every run's energies, weights and update at once (runs vectorised). ``keys`` (R,)
    are the runs' own streams: run r's step-k increments are drawn with
    ``fold_in(keys[r], k)``. With the reference update, ``space`` carries a run axis."""
    batched = bool(shape.base_update_every)

    def energies(z, sp):
        if batched:
            return jax.vmap(lambda zz, ss: _energies(energy, ss, zz))(z, sp)
        return _energies(energy, sp, z)

    def record(z, z_bar, sp):
        if batched:  # the reference moves: map to (m, Σ) now
            return jax.vmap(_record)(z, z_bar, sp)
        # fixed reference: keep z̄ and the raw distances, map and reduce after the loop
        return {
            "z_bar": z_bar,
            "variance": particle_variance(z),
            "dists": jnp.linalg.norm(z - z_bar[..., None, :], axis=-1),
        }

    def noise(step_keys, diff):  # each run from its own stream
        return jax.vmap(shape.noise)(step_keys, diff)

    def body(state: _State, k: jax.Array):
        sub = jax.vmap(jax.random.fold_in, (0, None))(state.key, k)
        z, sp = state.z, state.space
        if batched:
            z, sp = jax.lax.cond(
                (k > 0) & (k % shape.base_update_every == 0),
                lambda: jax.vmap(lambda zz, ss: _rebase(energy, hyper, zz, ss))(z, sp),
                lambda: (z, sp),
            )
        z_new, z_bar = _step(energy, hyper, noise, z, sp, sub, energies(z, sp))
        return _State(z_new, sp, state.key), record(z, z_bar, sp)

    def outer(state: _State, k0: jax.Array):
        state, recs = jax.lax.scan(body, state, k0 + jnp.arange(shape.every))
        return state, jax.tree.map(lambda a: a[0], recs)

    if batched:
        space = jax.tree.map(lambda a: jnp.broadcast_to(a, (z0.shape[0], *a.shape)), space)
    state = _State(z0, space, keys)
    if shape.every == 1:
        state, recs = jax.lax.scan(body, state, jnp.arange(shape.steps))
    else:
        ks = jnp.arange(shape.steps // shape.every) * shape.every
        state, recs = jax.lax.scan(outer, state, ks)
    z, sp = state.z, state.space
    last = record(z, consensus_point(z, energies(z, sp), hyper.alpha), sp)
    recs = jax.tree.map(lambda a, b: jnp.swapaxes(jnp.concatenate([a, b[None]]), 0, 1), recs, last)
    if not batched:
        recs["mean"], recs["cov"] = sp.gaussian(recs.pop("z_bar"))
        recs["distance"] = jnp.median(recs.pop("dists"), axis=-1)
    # consensus energies, evaluated once after the loop
    recs["energy"] = jax.vmap(jax.vmap(energy))(recs["mean"], recs["cov"])
    sigma0 = sp.sigma0 if batched else jnp.broadcast_to(sp.sigma0, (z.shape[0], *sp.sigma0.shape))
    return recs, z, sigma0


#: XLA:CPU hands some reductions to YNNPACK fusions whose summation order depends on the
#: array's shape: a run's energies and weights then change in the last bit with the batch
#: it is in. With those fusions off, every reduction over a run's own axes is computed
#: the same whatever the batch size (tested: a run alone equals the run in any batch).
RUN_INVARIANT_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}


def run_invariant_jit(fn: Callable, **jit_kwargs) -> Callable:
    """``jax.jit(fn, compiler_options=RUN_INVARIANT_OPTIONS)``; falls back to a plain
    ``jax.jit`` with a warning when this XLA does not know the option."""
    fast = jax.jit(fn, compiler_options=RUN_INVARIANT_OPTIONS, **jit_kwargs)
    plain = jax.jit(fn, **jit_kwargs)
    state = {"ok": True}

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if state["ok"]:
            try:
                return fast(*args, **kwargs)
            except jax.errors.JaxRuntimeError as err:
                if "ynn_fusion_type" not in str(err):
                    raise
                state["ok"] = False
                log.warning("XLA has no option %s: runs may differ in the last bit "
                            "between batch sizes", next(iter(RUN_INVARIANT_OPTIONS)))  # fmt: skip
        return plain(*args, **kwargs)

    return call


@partial(run_invariant_jit, static_argnames=("shape", "given", "fold"))
def _run_batch(key_data, ids, m0, cov0, z0, energy, hyper: _Hyper, space: LBWSpace, *,
               shape, given, fold):  # fmt: skip
    """Initialise (unless ``given``) and run every run; all in one program, compiled once
    per (energy tree, shape): no host round trip between steps.

    Per run r (the leading axis of ``key_data``, ``ids``, ``m0``, ``cov0``, ``z0``, which
    :func:`~icml26.shared.sharding.map_trials` may split over devices): its key is
    ``fold_in(key_data[r], ids[r])`` when ``fold`` (one user key, broadcast) or
    ``key_data[r]`` (a key per run); ``split`` of it gives the initial draw's and the
    loop's keys."""
    keys = _threefry(key_data)
    if fold:
        keys = jax.vmap(jax.random.fold_in)(keys, ids)
    k_init, k_loop = jnp.moveaxis(jax.vmap(jax.random.split)(keys), 1, 0)
    if not given:
        t0 = jax.vmap(space.log)(cov0)
        z0 = jax.vmap(lambda k, m, t: _init(k, m, t, space, shape.n_particles, hyper.spread))(
            k_init, m0, t0
        )
    return _loop(energy, hyper, shape, space, k_loop, z0)


_init_jit = jax.jit(_init, static_argnames=("n",))
_step_jit = jax.jit(_step, static_argnames=("noise",))


@jax.jit
def _probe(energy, m: jax.Array, sigma: jax.Array) -> jax.Array:
    return energy(m, sigma)


@dataclass(frozen=True)
class CBOResult:
    """What :meth:`GaussCBO.run` returns (numpy arrays, first axis = run).

    ``times`` (K,), ``mean`` (R, K, d), ``cov`` (R, K, d, d) and ``energy`` (R, K): the
    consensus Gaussian and its energy at each recorded step (K = steps + 1 with
    record_every = 1); ``variance`` (R, K): particle variance; ``distance`` (R, K): the
    median particle-to-consensus distance; ``particles`` (R, N, D): final coefficients
    in the final reference ``sigma0`` (R, d, d).
    """

    times: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    energy: np.ndarray
    variance: np.ndarray
    particles: np.ndarray
    sigma0: np.ndarray
    distance: np.ndarray

    @property
    def final_mean(self) -> np.ndarray:
        return self.mean[:, -1]

    @property
    def final_cov(self) -> np.ndarray:
        return self.cov[:, -1]

    @property
    def final_energy(self) -> np.ndarray:
        return self.energy[:, -1]

    @property
    def variance_ratio(self) -> np.ndarray:
        """Var_T / Var_0 of the particle ensemble, per run."""
        return self.variance[:, -1] / self.variance[:, 0]


class GaussCBO:
    """Gaussian CBO (Algorithm 1) for an energy E(m, Σ) over Gaussians in R^d.

    Parameters follow Section 4.2: ``n_particles`` N = 20, ``alpha`` α = 10⁴, ``lam``
    λ = 1, ``sigma`` σ = 5, ``dt`` Δt = 0.05, reference ``sigma0`` Σ⁰ = I, particles
    initialised within ``init_spread`` = 0.1 of the start. ``noise`` is
    ``"anisotropic"`` (the paper), ``"isotropic"`` or a callable ``(key, z̄ − z) ->
    noise`` of the shape of z̄ − z, (…, N, D).

    ``energy`` must be JAX-traceable, ``(m (d,), Σ (d, d)) -> scalar``, e.g.
    :class:`~icml26.gausscbo.objectives.KLDivergence`. Example::

        target = paper_target("A")
        cbo = GaussCBO(KLDivergence(target, d=2), d=2)
        res = cbo.run(jax.random.key(0), m0=np.zeros(2), cov0=np.eye(2), steps=200, runs=8)
        res.final_energy  # (8,)
    """

    def __init__(
        self,
        energy: Energy,
        d: int,
        *,
        n_particles: int = 20,
        alpha: float = 1e4,
        lam: float = 1.0,
        sigma: float = 5.0,
        dt: float = 0.05,
        sigma0: object | None = None,
        noise: str | Noise = "anisotropic",
        init_spread: float = 0.1,
        base_update_every: int = 0,
    ) -> None:
        if not callable(energy):
            raise TypeError(f"energy must be callable (m, Sigma) -> scalar, got {type(energy)}")
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
            raise ValueError(f"d must be a positive integer, got {d!r}")
        if int(n_particles) < 1:
            raise ValueError(f"n_particles must be positive, got {n_particles}")
        for name, value in (("alpha", alpha), ("lam", lam), ("dt", dt)):
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be positive and finite, got {value}")
        if not np.isfinite(sigma) or sigma < 0:
            raise ValueError(f"sigma must be non-negative and finite, got {sigma}")
        if init_spread < 0:
            raise ValueError(f"init_spread must be non-negative, got {init_spread}")
        if int(base_update_every) < 0:
            raise ValueError(f"base_update_every must be >= 0, got {base_update_every}")
        if isinstance(noise, str):
            if noise not in NOISES:
                raise ValueError(
                    f"noise must be one of {sorted(NOISES)} or a callable, got {noise!r}"
                )
            noise = NOISES[noise]
        elif not callable(noise):
            raise TypeError(f"noise must be a name or a callable, got {type(noise).__name__}")
        self.energy = as_pytree_callable(energy)
        self.d = int(d)
        self.n_particles = int(n_particles)
        self.alpha, self.lam, self.sigma, self.dt = (
            float(alpha),
            float(lam),
            float(sigma),
            float(dt),
        )
        self.noise = noise
        self.init_spread = float(init_spread)
        self.base_update_every = int(base_update_every)
        self.space = LBWSpace.create(sigma0, d=self.d)

    # -- pieces ------------------------------------------------------------------------
    @property
    def _hyper(self) -> _Hyper:
        return _Hyper(
            *(jnp.asarray(v) for v in (self.alpha, self.lam, self.sigma, self.dt, self.init_spread))
        )

    @with_float64
    def energies(self, z: jax.Array) -> jax.Array:
        """E#(z) = E(N(m, exp_{Σ⁰}(T))) for coefficient vectors z (…, D)."""
        return _energies(self.energy, self.space, jnp.asarray(z))

    @with_float64
    def init(self, key: jax.Array, m0: object, cov0: object) -> jax.Array:
        """N particles around (m0, Σ0) as in Section 4.2 (one run): an (N, D) array."""
        m, c = self._check_start(m0, cov0, None)
        t0 = self.space.log(jnp.asarray(c[0]))
        return _init_jit(
            key, jnp.asarray(m[0]), t0, self.space, self.n_particles, self._hyper.spread
        )

    @with_float64
    def step(self, z: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """One Euler–Maruyama step of one run's particles z (N, D): (new z, consensus z̄)."""
        z = jnp.asarray(z)
        if z.ndim != 2 or z.shape[1] != self.space.dim:
            raise ValueError(f"z must have shape (N, {self.space.dim}), got {z.shape}")
        return _step_jit(self.energy, self._hyper, self.noise, z, self.space, key)

    # -- public ------------------------------------------------------------------------
    @with_float64
    def run(
        self,
        key: jax.Array,
        m0: object,
        cov0: object,
        steps: int,
        *,
        runs: int | None = None,
        record_every: int = 1,
        particles: object | None = None,
        devices: object = None,
    ) -> CBOResult:
        """Run ``runs`` independent swarms for ``steps`` Euler–Maruyama steps.

        ``m0`` (d,) or (R, d) and ``cov0`` (d, d) or (R, d, d) give each run's start
        (shared when unbatched; ``runs`` then sets R, default 1). ``key`` is one JAX
        PRNG key, run r then draws from its own stream ``fold_in(key, r)``
        (:func:`run_keys`), or an array of R keys, one per run. Run r's numbers depend
        only on its key and start: the same alone, in a batch of any size or on any
        device. ``particles`` (R, N, D), if given, are the initial coefficient vectors
        (e.g. to give another implementation the same start); they replace the draw
        around (m0, Σ0).

        ``devices`` (``None``: every local device; a count; or a list of ``jax.Device``)
        spreads the runs over a ``Mesh`` on the run axis
        (:mod:`icml26.shared.sharding`); R is padded to a multiple of the device count and
        the padding dropped. ``devices=1`` keeps the plain one-device program.
        """
        data = _key_data(key)
        if data.ndim > 2:
            raise ValueError(f"key must be one key or a 1-D array of keys, got {data.shape[:-1]}")
        if data.ndim == 2 and runs is None and np.ndim(m0) == 1:
            runs = data.shape[0]  # a key per run, starts shared
        m0_arr, cov_arr = self._check_start(m0, cov0, runs)
        steps = _positive_int(steps, "steps")
        every = _positive_int(record_every, "record_every")
        if steps % every:
            raise ValueError(f"record_every must divide steps, got {every} for {steps} steps")
        n_runs = m0_arr.shape[0]
        fold = data.ndim == 1
        if fold:
            data = np.broadcast_to(data, (n_runs, 2))
        elif data.shape[0] != n_runs:
            raise ValueError(f"got {data.shape[0]} keys for {n_runs} runs (one key per run)")
        if particles is None:
            z0 = np.zeros((n_runs, self.n_particles, self.space.dim))
        else:
            z0 = _real(particles, "particles")
            if z0.ndim == 2:
                z0 = z0[None]
            want = (n_runs, self.n_particles, self.space.dim)
            if z0.shape != want:
                raise ValueError(f"particles must have shape {want}, got {z0.shape}")
        mesh = trial_mesh(devices)
        self._check_energy(m0_arr[0], cov_arr[0])
        shape = _Shape(self.d, self.n_particles, steps, every, self.noise, self.base_update_every)
        program = partial(_run_batch, shape=shape, given=particles is not None, fold=fold)
        per_run = (data, np.arange(n_runs, dtype=np.uint32), m0_arr, cov_arr, z0)
        shared = (self.energy, self._hyper, self.space)
        if mesh is None:
            recs, z, sigma0 = program(*per_run, *shared)
        else:
            padded = pad_trials(per_run, padded_count(n_runs, mesh))
            out = map_trials(program, mesh, padded, shared)
            recs, z, sigma0 = jax.tree.map(lambda a: a[:n_runs], out)
        times = np.arange(0, steps + 1, every) * self.dt
        return CBOResult(
            times=times,
            mean=np.asarray(recs["mean"]),
            cov=np.asarray(recs["cov"]),
            energy=np.asarray(recs["energy"]),
            variance=np.asarray(recs["variance"]),
            particles=np.asarray(z),
            sigma0=np.asarray(sigma0),
            distance=np.asarray(recs["distance"]),
        )

    def _check_start(self, m0: object, cov0: object, runs: int | None):
        d = self.d
        m = _real(m0, "m0")
        c = _real(cov0, "cov0")
        if m.shape == (d,):
            m = m[None]
        if c.shape == (d, d):
            c = c[None]
        if m.ndim != 2 or m.shape[1] != d:
            raise ValueError(f"m0 must have shape ({d},) or (runs, {d}), got {np.shape(m0)}")
        if c.ndim != 3 or c.shape[1:] != (d, d):
            raise ValueError(
                f"cov0 must have shape ({d}, {d}) or (runs, {d}, {d}), got {np.shape(cov0)}"
            )
        batch = {arr.shape[0] for arr in (m, c) if arr.shape[0] > 1}
        if len(batch) > 1:
            raise ValueError(f"m0 has {m.shape[0]} runs but cov0 has {c.shape[0]}")
        if runs is not None:
            runs = _positive_int(runs, "runs")
            if batch and runs not in batch:
                raise ValueError(
                    f"runs={runs} disagrees with the {batch.pop()} starts given in m0/cov0"
                )
        n = batch.pop() if batch else (runs or 1)
        if not np.allclose(c, np.swapaxes(c, 1, 2), atol=1e-10):
            raise ValueError("cov0 must be symmetric")
        if np.linalg.eigvalsh(c).min() <= 0:
            raise ValueError("cov0 must be positive definite")
        return np.broadcast_to(m, (n, d)).copy(), np.broadcast_to(c, (n, d, d)).copy()

    def _check_energy(self, m: np.ndarray, cov: np.ndarray) -> None:
        check = getattr(self.energy, "check", None)
        if check is not None:
            check(m, cov)
        out = jax.eval_shape(self.energy, m, cov)
        if out.shape != ():
            raise ValueError(f"energy must return a scalar, got shape {out.shape}")
        value = np.asarray(_probe(self.energy, m, cov))
        if not np.isfinite(value):
            raise ValueError(f"energy is not finite at the starting Gaussian (got {value})")


def _positive_int(value: object, name: str) -> int:
    """``value`` as a positive int; 2.5 or True is an error, not silently truncated."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _real(value: object, name: str) -> np.ndarray:
    """A finite float64 copy of ``value``; complex or non-numeric input is a TypeError."""
    arr = np.asarray(value)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must be a real-valued array, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr
