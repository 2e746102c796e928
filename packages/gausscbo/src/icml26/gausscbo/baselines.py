"""The paper's baselines (Section 4.1, Appendix D.4) and a library Gaussian VI.

Deterministic single-Gaussian flows for KL(N(m, Σ) ‖ e^{−V}/Z), X ~ N(m, Σ), with ∇V,
∇²V from ``jax.grad``/``jax.hessian``, discretised by explicit Euler:

- ``"bw"``   Bures–Wasserstein gradient flow (Lambert et al., 2022):
  ṁ = −E∇V,  Σ̇ = 2I − E[∇V ⊗ (X − m) + (X − m) ⊗ ∇V].
- ``"svgd"`` Gaussian SVGD with kernel K(x, y) = xᵀy + 1 (Liu et al., 2023):
  G = I − E∇²V Σ,  ṁ = G m − (1 + |m|²) E∇V,  Σ̇ = GΣ + ΣGᵀ.
- ``"fr"``   Fisher–Rao / natural-gradient flow (Barfoot, 2020):
  G = ½(I − Σ E∇²V),  ṁ = −Σ E∇V,  Σ̇ = GΣ + ΣGᵀ.

As in the official notebook (``experiment_2D.ipynb`` of borghig/GaussCBO), the moments
E∇V, E[∇V ⊗ (X − m)] and E∇²V are estimated with the 2d-point spherical–radial cubature
rule (m ± √d L e_i, weights 1/(2d); Arasaratnam & Haykin, 2009), whereas the KL that is
reported (and that CBO minimises) uses the (2d+1)-point rule. The velocity is the
paper's cross form of Σ̇ (not the Stein/Hessian form), Euler in (m, Σ), Σ symmetrised and
eigenvalue-clipped after each step. With the notebook's starts (run i:
``np.random.default_rng(i).uniform(-5, 5, 2)``) this reproduces the notebook's BW KL
trajectories on targets A–D run by run to ~1e-8, and the FR medians to 1e-6
(``tests/test_baselines.py``). The notebook's SVGD is not reproduced run by run (medians
differ by 0.02–0.08); the reason is unknown. ``moments="objective"`` uses the
objective's own rule instead: then the BW flow's fixed point is the minimiser of the
quadrature KL and BW matches CBO on target A (0.304).

Step sizes (Section 4.2): Δt for BW, Δt/4 for SVGD and Δt/2 for FR at d = 2, Δt/20 for
SVGD and FR at d = 10 (:data:`STEP_FACTORS`). After each step Σ is symmetrised and its
eigenvalues clipped at 10⁻⁶ (Lambert et al., 2022); the paper does not say whether it
clips SVGD and FR, we clip all three.

:func:`numpyro_fullrank_vi` is the "what users would use" anchor: numpyro's full-rank
Gaussian ADVI (``AutoMultivariateNormal`` + ``SVI`` with a 1-sample ELBO gradient and
Adam), needs the ``peers`` extra.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from icml26.gausscbo.objectives import KLDivergence, cholesky, cubature_points
from icml26.gausscbo.precision import with_float64

__all__ = [
    "FLOWS",
    "MOMENT_RULES",
    "STEP_FACTORS",
    "FlowResult",
    "bw_velocity",
    "evaluate",
    "fr_velocity",
    "gaussian_flow",
    "numpyro_fullrank_vi",
    "svgd_velocity",
]

#: step-size divisors of the paper: (d = 2, d = 10)
STEP_FACTORS: dict[str, tuple[int, int]] = {"bw": (1, 1), "svgd": (4, 20), "fr": (2, 20)}


MOMENT_RULES = ("cubature", "objective")


def _moment_points(kl: KLDivergence, m: jax.Array, sigma: jax.Array, rule: str):
    """Nodes and weights of the moment rule at N(m, Σ).

    ``rule="cubature"``: the 2d-point spherical–radial cubature rule
    (:func:`~icml26.gausscbo.objectives.cubature_points`), as the official notebook;
    ``"objective"``: the objective's own quadrature (its (2d+1) sigma points or MC draws).
    """
    chol = cholesky(sigma)
    return cubature_points(m, chol) if rule == "cubature" else kl.points(m, chol)


def _expect(f, pts: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.tensordot(w, jax.vmap(f)(pts), axes=1)


def bw_velocity(kl: KLDivergence, m: jax.Array, sigma: jax.Array, rule: str = "cubature"):
    """(ṁ, Σ̇) of the Bures–Wasserstein gradient flow (cross form of Σ̇, as the paper)."""
    pts, w = _moment_points(kl, m, sigma, rule)
    grad_v = jax.grad(kl.potential)
    e_grad = _expect(grad_v, pts, w)
    e_cross = _expect(lambda x: jnp.outer(grad_v(x), x - m), pts, w)
    eye = jnp.eye(m.shape[-1], dtype=m.dtype)
    return -e_grad, 2.0 * eye - e_cross - e_cross.T


def svgd_velocity(kl: KLDivergence, m: jax.Array, sigma: jax.Array, rule: str = "cubature"):
    """(ṁ, Σ̇) of Gaussian SVGD with the kernel xᵀy + 1."""
    pts, w = _moment_points(kl, m, sigma, rule)
    e_grad = _expect(jax.grad(kl.potential), pts, w)
    e_hess = _expect(jax.hessian(kl.potential), pts, w)
    g = jnp.eye(m.shape[-1], dtype=m.dtype) - e_hess @ sigma
    return g @ m - (1.0 + m @ m) * e_grad, g @ sigma + sigma @ g.T


def fr_velocity(kl: KLDivergence, m: jax.Array, sigma: jax.Array, rule: str = "cubature"):
    """(ṁ, Σ̇) of the Fisher–Rao (natural-gradient) flow."""
    pts, w = _moment_points(kl, m, sigma, rule)
    e_grad = _expect(jax.grad(kl.potential), pts, w)
    e_hess = _expect(jax.hessian(kl.potential), pts, w)
    g = 0.5 * (jnp.eye(m.shape[-1], dtype=m.dtype) - sigma @ e_hess)
    return -sigma @ e_grad, g @ sigma + sigma @ g.T


FLOWS: dict[str, Callable] = {"bw": bw_velocity, "svgd": svgd_velocity, "fr": fr_velocity}


def _clip(sigma: jax.Array, floor: float) -> jax.Array:
    sigma = 0.5 * (sigma + sigma.T)
    w, q = jnp.linalg.eigh(sigma)
    return (q * jnp.clip(w, floor, None)) @ q.T


@dataclass(frozen=True)
class FlowResult:
    """``times`` (K,), ``mean`` (R, K, d), ``cov`` (R, K, d, d), ``energy`` (R, K)."""

    times: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    energy: np.ndarray

    @property
    def final_mean(self) -> np.ndarray:
        return self.mean[:, -1]

    @property
    def final_cov(self) -> np.ndarray:
        return self.cov[:, -1]

    @property
    def final_energy(self) -> np.ndarray:
        return self.energy[:, -1]


@partial(jax.jit, static_argnames=("kind", "steps", "every", "rule"))
def _flow_batch(kl, m0, s0, dt, clip, *, kind: str, steps: int, every: int, rule: str):
    velocity = FLOWS[kind]

    def step(carry, _):
        m, s = carry
        dm, ds = velocity(kl, m, s, rule)
        m_new = m + dt * dm
        s_new = _clip(s + dt * ds, clip)
        # a diverged run (non-finite) is frozen where it was, and shows as the penalty
        ok = jnp.all(jnp.isfinite(m_new)) & jnp.all(jnp.isfinite(s_new))
        return (jnp.where(ok, m_new, m), jnp.where(ok, s_new, s)), None

    def block(carry, _):
        out = carry
        carry, _ = jax.lax.scan(step, carry, None, length=every)
        return carry, out

    def one(m, s):
        (m_t, s_t), (ms, ss) = jax.lax.scan(block, (m, s), None, length=steps // every)
        ms = jnp.concatenate([ms, m_t[None]])
        ss = jnp.concatenate([ss, s_t[None]])
        return ms, ss, jax.vmap(kl)(ms, ss)

    return jax.vmap(one)(m0, s0)


def _int(value: object, name: str, minimum: int = 1) -> int:
    """``value`` as an int ≥ ``minimum``; floats such as 2.5 are an error, not truncated."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _real_array(value: object, name: str) -> np.ndarray:
    """``value`` as a finite float64 array; complex or non-numeric input is an error."""
    arr = np.asarray(value)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must be a real array, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


@with_float64
def gaussian_flow(
    kind: str,
    kl: KLDivergence,
    m0: object,
    cov0: object,
    *,
    dt: float,
    steps: int,
    record_every: int = 1,
    clip: float = 1e-6,
    moments: str = "cubature",
) -> FlowResult:
    """Run the flow ``kind`` ∈ {"bw", "svgd", "fr"} from each start (m0 (R, d), Σ0 (R, d, d)).

    ``dt`` is the flow's own step (already divided by its :data:`STEP_FACTORS`);
    ``record_every`` steps are recorded (use the step factor to share CBO's time grid).
    ``moments`` is the rule for E∇V, E∇²V and E[∇V ⊗ (X − m)]: ``"cubature"`` (2d
    points, the official notebook's) or ``"objective"`` (the objective's own rule).
    The recorded energy is always the objective ``kl``. Runs that blow up are frozen at
    their last finite state.
    """
    if kind not in FLOWS:
        raise ValueError(f"kind must be one of {sorted(FLOWS)}, got {kind!r}")
    if moments not in MOMENT_RULES:
        raise ValueError(f"moments must be one of {MOMENT_RULES}, got {moments!r}")
    if not isinstance(kl, KLDivergence):
        raise TypeError(f"the flows need a KLDivergence objective (they use ∇V), got {type(kl)}")
    d = kl.d
    steps = _int(steps, "steps")
    record_every = _int(record_every, "record_every")
    if steps % record_every:
        raise ValueError(f"record_every must divide steps, got {record_every} for {steps}")
    m = _real_array(m0, "m0")
    if m.shape[-1:] != (d,) or m.ndim > 2:
        raise ValueError(f"m0 must have shape ({d},) or (runs, {d}), got {m.shape}")
    m = m.reshape(-1, d)
    s = _real_array(cov0, "cov0")
    s = np.broadcast_to(s, (m.shape[0], d, d)) if s.shape == (d, d) else s
    if s.shape != (m.shape[0], d, d):
        raise ValueError(f"cov0 must be ({d}, {d}) or ({m.shape[0]}, {d}, {d}), got {s.shape}")
    if not np.allclose(s, np.swapaxes(s, 1, 2), atol=1e-10):
        raise ValueError("cov0 must be symmetric")
    if np.linalg.eigvalsh(s).min() <= 0:
        raise ValueError("cov0 must be positive definite")
    if not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be positive and finite, got {dt}")
    if not (np.isfinite(clip) and clip > 0):
        raise ValueError(f"clip must be positive and finite, got {clip}")
    for r in range(m.shape[0]) if m.shape[0] <= 8 else (0,):
        kl.check(jnp.asarray(m[r]), jnp.asarray(s[r]))
    ms, ss, e = _flow_batch(
        kl, jnp.asarray(m), jnp.asarray(s), jnp.asarray(dt), jnp.asarray(clip),
        kind=kind, steps=steps, every=record_every, rule=moments,
    )  # fmt: skip
    times = np.arange(0, steps + 1, record_every) * dt
    return FlowResult(times, np.asarray(ms), np.asarray(ss), np.asarray(e))


@functools.lru_cache(maxsize=8)
def _advi_runner(d: int, steps: int, lr: float, init_scale: float) -> Callable:
    """numpyro's SVI loop, jitted once per (d, steps, lr, scale); the target is an input."""
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoMultivariateNormal
    from numpyro.infer.initialization import init_to_value

    def model(shift, kl):
        y = numpyro.sample(
            "y", dist.ImproperUniform(dist.constraints.real_vector, (), event_shape=(d,))
        )
        numpyro.factor("log_p", kl.log_density(shift + y))

    guide = AutoMultivariateNormal(
        model, init_loc_fn=init_to_value(values={"y": jnp.zeros(d)}), init_scale=init_scale
    )
    svi = SVI(model, guide, numpyro.optim.Adam(lr), Trace_ELBO())

    def one(k, shift, kl):
        state = svi.init(k, shift, kl)
        state, _ = jax.lax.scan(lambda s, _: svi.update(s, shift, kl), state, None, length=steps)
        params = svi.get_params(state)
        scale_tril = params["auto_scale_tril"]
        return shift + params["auto_loc"], scale_tril @ scale_tril.T

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None)))


@with_float64
def numpyro_fullrank_vi(
    kl: KLDivergence,
    m0: object,
    key: jax.Array,
    *,
    steps: int = 1000,
    lr: float = 0.05,
    init_scale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Full-rank Gaussian ADVI with numpyro (``AutoMultivariateNormal`` + ``SVI``).

    The model is an improper flat prior on x ∈ R^d with the factor log p(x); the guide
    starts at N(m0, init_scale² I) (the CBO/flow start Σ0 = I). Each run (row of m0)
    is one independent optimisation (vmapped), a 1-sample ELBO gradient with Adam(lr).
    Returns final means (R, d) and covariances (R, d, d).
    """
    if importlib.util.find_spec("numpyro") is None:
        raise ImportError("numpyro_fullrank_vi needs numpyro: pip install 'icml26-gausscbo[peers]'")
    if not isinstance(kl, KLDivergence):
        raise TypeError(f"numpyro_fullrank_vi needs a KLDivergence objective, got {type(kl)}")
    d = kl.d
    m = np.asarray(m0, dtype=np.float64).reshape(-1, d)
    if steps < 1 or not lr > 0:
        raise ValueError(f"steps and lr must be positive, got {steps}, {lr}")
    run = _advi_runner(d, int(steps), float(lr), float(init_scale))
    means, covs = run(jax.random.split(key, m.shape[0]), jnp.asarray(m), kl)
    return np.asarray(means), np.asarray(covs)


@jax.jit
def evaluate(kl: KLDivergence, means: jax.Array, covs: jax.Array) -> jax.Array:
    """The objective at a batch of Gaussians (R, d), (R, d, d); compiled once per shape."""
    return jax.vmap(kl)(means, covs)
