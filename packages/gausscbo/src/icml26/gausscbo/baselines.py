"""The paper's baselines (Section 4.1, Appendix D.4) and a library Gaussian VI.

Deterministic single-Gaussian flows for KL(N(m, Σ) ‖ e^{−V}/Z), X ~ N(m, Σ), with the
expectations by the same quadrature as CBO and ∇V, ∇²V from ``jax.grad``/``jax.hessian``,
discretised by explicit Euler:

- ``"bw"``   Bures–Wasserstein gradient flow (Lambert et al., 2022):
  ṁ = −E∇V,  Σ̇ = 2I − E[∇V ⊗ (X − m) + (X − m) ⊗ ∇V].
- ``"svgd"`` Gaussian SVGD with kernel K(x, y) = xᵀy + 1 (Liu et al., 2023):
  G = I − E∇²V Σ,  ṁ = G m − (1 + |m|²) E∇V,  Σ̇ = GΣ + ΣGᵀ.
- ``"fr"``   Fisher–Rao / natural-gradient flow (Barfoot, 2020):
  G = ½(I − Σ E∇²V),  ṁ = −Σ E∇V,  Σ̇ = GΣ + ΣGᵀ.

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

from icml26.gausscbo.objectives import KLDivergence
from icml26.gausscbo.precision import with_float64

__all__ = [
    "FLOWS",
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


def _moments(kl: KLDivergence, m: jax.Array, sigma: jax.Array):
    """E∇V, E∇²V and E[∇V ⊗ (X − m)] under N(m, Σ) by the objective's quadrature."""
    chol = jnp.linalg.cholesky(sigma)
    grad_v = jax.grad(kl.potential)
    e_grad = kl.expectation(grad_v, m, chol)
    e_hess = kl.expectation(jax.hessian(kl.potential), m, chol)
    e_cross = kl.expectation(lambda x: jnp.outer(grad_v(x), x - m), m, chol)
    return e_grad, e_hess, e_cross


def bw_velocity(kl: KLDivergence, m: jax.Array, sigma: jax.Array):
    """(ṁ, Σ̇) of the Bures–Wasserstein gradient flow."""
    e_grad, _, e_cross = _moments(kl, m, sigma)
    eye = jnp.eye(m.shape[-1], dtype=m.dtype)
    return -e_grad, 2.0 * eye - e_cross - e_cross.T


def svgd_velocity(kl: KLDivergence, m: jax.Array, sigma: jax.Array):
    """(ṁ, Σ̇) of Gaussian SVGD with the kernel xᵀy + 1."""
    e_grad, e_hess, _ = _moments(kl, m, sigma)
    g = jnp.eye(m.shape[-1], dtype=m.dtype) - e_hess @ sigma
    return g @ m - (1.0 + m @ m) * e_grad, g @ sigma + sigma @ g.T


def fr_velocity(kl: KLDivergence, m: jax.Array, sigma: jax.Array):
    """(ṁ, Σ̇) of the Fisher–Rao (natural-gradient) flow."""
    e_grad, e_hess, _ = _moments(kl, m, sigma)
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


@partial(jax.jit, static_argnames=("kind", "steps", "every"))
def _flow_batch(kl, m0, s0, dt, clip, *, kind: str, steps: int, every: int):
    velocity = FLOWS[kind]

    def step(carry, _):
        m, s = carry
        dm, ds = velocity(kl, m, s)
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
) -> FlowResult:
    """Run the flow ``kind`` ∈ {"bw", "svgd", "fr"} from each start (m0 (R, d), Σ0 (R, d, d)).

    ``dt`` is the flow's own step (already divided by its :data:`STEP_FACTORS`);
    ``record_every`` steps are recorded (use the step factor to share CBO's time grid).
    Runs that blow up are frozen at their last finite state.
    """
    if kind not in FLOWS:
        raise ValueError(f"kind must be one of {sorted(FLOWS)}, got {kind!r}")
    if not isinstance(kl, KLDivergence):
        raise TypeError(f"the flows need a KLDivergence objective (they use ∇V), got {type(kl)}")
    d = kl.d
    m = np.asarray(m0, dtype=np.float64).reshape(-1, d)
    s = np.asarray(cov0, dtype=np.float64)
    s = np.broadcast_to(s, (m.shape[0], d, d)) if s.shape == (d, d) else s
    if s.shape != (m.shape[0], d, d):
        raise ValueError(f"cov0 must be ({d}, {d}) or ({m.shape[0]}, {d}, {d}), got {s.shape}")
    if np.linalg.eigvalsh(s).min() <= 0:
        raise ValueError("cov0 must be positive definite")
    if steps < 1 or record_every < 1 or steps % record_every:
        raise ValueError(f"record_every must divide steps > 0, got {record_every}, {steps}")
    if not dt > 0:
        raise ValueError(f"dt must be positive, got {dt}")
    kl.check(jnp.asarray(m[0]), jnp.asarray(s[0]))
    ms, ss, e = _flow_batch(
        kl, jnp.asarray(m), jnp.asarray(s), jnp.asarray(dt), jnp.asarray(clip),
        kind=kind, steps=int(steps), every=int(record_every),
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
