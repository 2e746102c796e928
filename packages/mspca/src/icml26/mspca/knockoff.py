"""Mean-Shift PCA by knockoff mean: Algorithm 1 of the paper.

1. Top-k eigenpairs (λ̃_i, ũ_i) of the **uncentered** S̃ = X̃X̃ᵀ/n.
2. Strength of the top spike, ŝ = g⁻¹(λ̃₁).
3. A knockoff mean shift A' = m'γ'ᵀ of strength θ'² = 2ŝ: γ' ~ Bernoulli(π')ⁿ
   (π' = 1 in all the paper's experiments: every sample shifted), m' a Haar
   direction with ‖m'‖² = θ'²/π'.
4. Top-k eigenvalues λ'_j of (X̃ + A')(X̃ + A')ᵀ/n.
5. Index i is *stable* when min_j |λ̃_i − λ'_j| < ε = C·n^{-1/2} (C = 1/c in the
   official experiments). Unstable indices are mean-shift components and are
   dropped; the first stable ũ estimates the leading principal component.

Why it works: a covariance spike's right singular vector is a Gaussian score vector,
asymptotically orthogonal to 1 and to γ, so the constant knockoff shift moves its
eigenvalue by O(n^{-1/2}); a mean spike's right factor γ has mean π, so adding m'1ᵀ
changes the rank-2 signal [m m'][γ 1]ᵀ and moves its eigenvalue by O(1).
Centering the data first would erase the constant knockoff and nothing would move.

``variant="official_sv"`` is the official code (``ms_pca`` in the authors'
``rebuttal.py``), step by step: singular values s̃ of X̃/√n from scikit-learn's
``TruncatedSVD(n_components=k, n_iter=7, random_state=42)`` (the same randomized
solver and Gaussian start for both solves), ŝ from its ``estimate_theta_square``
applied to s̃₁ (absolute value of the discriminant), ‖m'‖ = 2·sqrt(ŝ/π'), and the
stability test |s̃_i − s'_j| < ε on *singular values*.

Both variants first divide the data by the noise level σ̂ read off the bulk of the
spectrum (:mod:`icml26.mspca.noise`), so that they see the paper's unit-variance
model whatever the scale of the input; ``noise_variance=1.0`` turns this off.

``n_knockoffs > 1`` repeats steps 3–5 with independent knockoffs and keeps an index
when a strict majority finds it stable (a faithful extension suggested for small d,
where one random m' can land near a true eigenvector).

References:
    M. Li, Z. Li, J. Yao. Mean-Shift PCA by Knockoff Mean. ICML 2026, arXiv:2605.25460.
"""

from __future__ import annotations

import numbers
import warnings
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from icml26.mspca.eigensolve import (
    METHODS,
    official_randomized_svd,
    official_start,
    resolve_method,
    top_eigenpairs_full,
)
from icml26.mspca.noise import MISFIT_WARNING, estimate_noise_variance
from icml26.mspca.sharding import map_trials, pad_trials, padded_count, trial_mesh
from icml26.mspca.spectrum import bulk_edge, official_spike_strength, spike_strength

VARIANTS = ("eigenvalue", "official_sv")


class KnockoffResult(NamedTuple):
    """The outcome of Algorithm 1 (leading axes are trials when vmapped).

    Eigenvalues are those of S̃/σ̂², in units of the noise variance ``noise_variance``.
    """

    eigenvalues: jax.Array  # (k,) λ̃, descending
    components: jax.Array  # (d, k) ũ, unit columns
    stable: jax.Array  # (k,) bool: kept by the stability test
    displacement: jax.Array  # (k,) min_j |λ̃_i − λ'_j| / ε (median over knockoffs)
    knockoff_eigenvalues: jax.Array  # (n_knockoffs, k) λ' of each knockoff
    knockoff_directions: jax.Array  # (n_knockoffs, d) unit directions of m'
    epsilon: jax.Array  # ε = C·n^{-1/2} (on singular values for "official_sv")
    knockoff_strength: jax.Array  # θ'² = π'‖m'‖² of the knockoff shift
    noise_variance: jax.Array  # σ̂² the data were divided by (1: not rescaled)
    bulk_misfit: jax.Array  # Kolmogorov–Smirnov distance of the bulk to Marchenko–Pastur
    solver_cycles: jax.Array  # Krylov cycles, first solve + knockoff solves (0: not Krylov)

    @property
    def first_stable(self) -> jax.Array:
        """Index of the first stable eigenpair (0 when none is stable; see ``any_stable``)."""
        return jnp.argmax(self.stable, axis=-1)

    @property
    def any_stable(self) -> jax.Array:
        return jnp.any(self.stable, axis=-1)

    @property
    def principal_component(self) -> jax.Array:
        """The PC1 estimate: the first stable ũ (zeros when no index is stable)."""
        idx = self.first_stable
        u = jnp.take_along_axis(self.components, idx[..., None, None], axis=-1)[..., 0]
        return jnp.where(self.any_stable[..., None], u, 0.0)


class _Options(NamedTuple):
    k: int
    variant: str
    n_knockoffs: int
    method: str
    depth: int
    max_cycles: int


def _knockoff_draw(key, d, n, pi_prime, dtype):
    k_dir, k_mask = jax.random.split(key)
    direction = jax.random.normal(k_dir, (d,), dtype=dtype)
    direction = direction / jnp.linalg.norm(direction)
    mask = jax.random.bernoulli(k_mask, pi_prime, (n,)).astype(dtype)
    return direction, mask


@partial(jax.jit, static_argnames=("opts",))
def _knockoff_pca(x, key, sigma2, C, pi_prime, strength_factor, tol, start, opts: _Options):
    d, n = x.shape
    c = d / n
    k = opts.k
    x = x / jnp.sqrt(sigma2)
    k_solve, k_knock = jax.random.split(key)
    draws = jax.vmap(lambda kk: _knockoff_draw(kk, d, n, pi_prime, x.dtype))(
        jax.random.split(k_knock, opts.n_knockoffs)
    )

    def shifted(strength, direction, mask):
        return x + jnp.outer(jnp.sqrt(strength / pi_prime) * direction, mask)

    if opts.variant == "official_sv":
        s, u = official_randomized_svd(x, k, start)
        lam = s**2
        # ‖m'‖ = 2·sqrt(ŝ/π'), so θ'² = π'‖m'‖² = 4ŝ
        strength = 4.0 * official_spike_strength(s[0], c)
        s_k = jax.vmap(
            lambda dr, ms: official_randomized_svd(shifted(strength, dr, ms), k, start)[0]
        )(*draws)
        lam_k = s_k**2
        tilde, prime = s, s_k  # the official test compares singular values
        cycles = jnp.asarray(0)
    else:
        kw = {"method": opts.method, "depth": opts.depth, "tol": tol, "max_cycles": opts.max_cycles}
        lam, u, block, cycles = top_eigenpairs_full(x, k, k_solve, **kw)
        strength = strength_factor * spike_strength(lam[0], c)  # θ'² = 2ŝ

        def solve(direction, mask):
            warm = None
            if block is not None:  # the first subspace plus the knockoff's own direction
                extra = direction if d <= n else mask / jnp.sqrt(n)
                warm = jnp.concatenate([block[:, :-1], extra[:, None]], axis=1)
            lam_p, _, _, cyc = top_eigenpairs_full(
                shifted(strength, direction, mask), k, k_solve, start=warm, **kw
            )
            return lam_p, cyc

        lam_k, cyc_k = jax.vmap(solve)(*draws)
        cycles = cycles + jnp.sum(cyc_k)
        tilde, prime = lam, lam_k
    eps = C / jnp.sqrt(n)
    gaps = jnp.abs(tilde[None, :, None] - prime[:, None, :])  # (K, k, k)
    dist = jnp.min(gaps, axis=-1)  # (K, k): distance to the nearest knockoff value
    votes = jnp.mean(dist < eps, axis=0)
    stable = votes > 0.5 if opts.n_knockoffs > 1 else votes > 0
    return KnockoffResult(
        eigenvalues=lam,
        components=u,
        stable=stable,
        displacement=jnp.median(dist, axis=0) / eps,
        knockoff_eigenvalues=lam_k,
        knockoff_directions=draws[0],
        epsilon=eps,
        knockoff_strength=strength,
        noise_variance=sigma2,
        bulk_misfit=jnp.asarray(jnp.nan),
        solver_cycles=cycles,
    )


def _is_int(v: object) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def validate_data(x: object, k: int | None = None) -> jax.Array:
    """Check a d × n data matrix (samples as columns) and return it as a float JAX array."""
    if isinstance(x, jax.core.Tracer):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"data must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(
            f"data must be a 2-D d × n matrix (samples as columns), got shape {arr.shape}"
        )
    d, n = arr.shape
    if d < 1:
        raise ValueError(f"data has no features (d = 0), shape {arr.shape}")
    if n < 2:
        raise ValueError(f"need at least 2 samples (columns), got n = {n}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("data contains NaN or inf")
    if k is not None:
        _check_k(k, d, n)
    return jnp.asarray(arr, dtype=float)


def _check_k(k: object, d: int, n: int) -> None:
    if not _is_int(k) or k < 1:
        raise ValueError(f"k (eigenpairs tested) must be a positive int, got {k!r}")
    if k > min(d, n):
        raise ValueError(f"k must lie in [1, min(d, n)] = [1, {min(d, n)}], got {k}")


def _options(shape, k, C, pi_prime, strength_factor, variant, n_knockoffs, method, tol,
             depth, max_cycles):  # fmt: skip
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not 0 < pi_prime <= 1:
        raise ValueError(f"pi_prime must lie in (0, 1], got {pi_prime}")
    if not strength_factor > 0:
        raise ValueError(f"strength_factor must be positive, got {strength_factor}")
    if not _is_int(n_knockoffs) or n_knockoffs < 1:
        raise ValueError(f"n_knockoffs must be a positive int, got {n_knockoffs!r}")
    if C is not None and not C > 0:
        raise ValueError(f"C must be positive, got {C}")
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol}")
    if not _is_int(depth) or depth < 1 or not _is_int(max_cycles) or max_cycles < 1:
        raise ValueError(f"depth and max_cycles must be positive ints, got {depth}, {max_cycles}")
    d, n = shape[-2:]
    start = jnp.asarray(official_start(d, n, k)) if variant == "official_sv" else None
    C = (n / d) if C is None else C
    opts = _Options(k, variant, n_knockoffs, resolve_method(method, shape), depth, max_cycles)
    arrays = tuple(jnp.asarray(v, dtype=float) for v in (C, pi_prime, strength_factor, tol))
    return arrays, start, opts


_estimate = jax.jit(estimate_noise_variance)
_estimate_batch = jax.jit(jax.vmap(estimate_noise_variance))


def _noise(
    x: jax.Array,
    noise_variance: object,
    batch: bool,
    trials: int | None = None,
    estimated: tuple[jax.Array, jax.Array] | None = None,
) -> tuple[jax.Array, jax.Array]:
    """σ̂² (estimated or given) and the bulk misfit, with clear errors and warnings.

    ``trials``: the real trial count of a padded batch (the checks ignore the padding);
    ``estimated``: (σ̂², misfit) already computed (on several devices).
    """
    rows = x.shape[0] if batch else None
    trials = rows if trials is None else trials
    if isinstance(noise_variance, str):
        if noise_variance != "estimate":
            raise ValueError(
                f"noise_variance must be 'estimate' or a positive number, got {noise_variance!r}"
            )
        if estimated is None:
            estimated = (_estimate_batch if batch else _estimate)(x)
        sigma2, misfit = estimated
        s2, mf = np.atleast_1d(np.asarray(sigma2)), np.atleast_1d(np.asarray(misfit))
        s2, mf = s2[:trials], mf[:trials]
        if not np.all(np.isfinite(s2) & (s2 > 0)):
            raise ValueError(
                "the bulk of the spectrum is zero (rank-deficient or constant data): the noise "
                "variance cannot be estimated; pass noise_variance=<σ²> explicitly"
            )
        bad = int(np.sum(mf > MISFIT_WARNING))
        if bad:
            where = f" in {bad} of {trials} trials" if batch else ""
            warnings.warn(
                f"the bulk of the spectrum does not follow the Marchenko–Pastur law{where} "
                f"(Kolmogorov–Smirnov distance {mf.max():.2f} > {MISFIT_WARNING}): the noise is "
                "not i.i.d. with a common variance, and the stability test's tolerance may not "
                "mean what it should",
                UserWarning,
                stacklevel=3,
            )
        return sigma2, misfit
    if isinstance(noise_variance, bool) or not isinstance(noise_variance, numbers.Real):
        raise TypeError(
            f"noise_variance must be 'estimate' or a positive number, got {noise_variance!r}"
        )
    if not (np.isfinite(noise_variance) and noise_variance > 0):
        raise ValueError(f"noise_variance must be positive and finite, got {noise_variance}")
    shape = (rows,) if batch else ()
    return jnp.full(shape, float(noise_variance)), jnp.full(shape, jnp.nan)


def _warn_no_outlier(res: KnockoffResult, c: float) -> None:
    """Warn when even the top eigenvalue (noise units) sits inside the bulk."""
    top = float(np.min(np.asarray(res.eigenvalues)[..., 0]))
    edge = float(bulk_edge(c))
    if top <= edge:
        warnings.warn(
            f"the top eigenvalue ({top:.3g} in noise units) is inside the Marchenko–Pastur "
            f"bulk (edge {edge:.3g}): there is no spike to find, and the stability test has "
            "nothing to separate",
            UserWarning,
            stacklevel=3,
        )


def knockoff_pca(
    x: object,
    key: jax.Array,
    *,
    k: int = 10,
    C: float | None = None,
    pi_prime: float = 1.0,
    strength_factor: float = 2.0,
    variant: str = "eigenvalue",
    n_knockoffs: int = 1,
    noise_variance: float | str = "estimate",
    method: str = "auto",
    tol: float = 1e-3,
    depth: int = 6,
    max_cycles: int = 30,
) -> KnockoffResult:
    """Run Algorithm 1 on ``x`` (d × n, samples as columns, **not centered**).

    Args:
        x: the data X̃.
        key: JAX PRNG key (solver start and the knockoff draws).
        k: number of eigenpairs tested (the official ``max_k_r`` = 10).
        C: tolerance constant, ε = C·n^{-1/2}; default 1/c (official experiments).
        pi_prime: knockoff mixture weight π' ∈ (0, 1] (the paper uses 1).
        strength_factor: θ'² = strength_factor · g⁻¹(λ̃₁) (the paper uses 2; the
            ``"official_sv"`` variant has its own fixed formula, θ'² = 4ŝ).
        variant: ``"eigenvalue"`` (Algorithm 1) or ``"official_sv"`` (official code).
        n_knockoffs: independent knockoffs; >1 keeps indices by majority vote.
        noise_variance: ``"estimate"`` (σ̂² by Marchenko–Pastur median matching, the
            data are divided by σ̂ first) or a known σ² (``1.0``: the paper's model, no
            rescaling). Warns when the bulk does not look like Marchenko–Pastur.
        method, tol, depth, max_cycles: eigensolver of the ``"eigenvalue"`` variant (see
            :func:`~icml26.mspca.eigensolve.top_eigenpairs`); ``"auto"`` is exact for
            min(d, n) ≤ 256 and block Krylov above, stopped when the top-k Ritz values
            move (or their residuals fall) below ``tol``·λ̃₁. The default 1e-3 is ε/6
            at c = 0.9, λ̃₁ ≈ 6; the Ritz values are then within about 1e-5 of the
            exact ones, since their error falls as the square of the residual.

    For many trials use :func:`knockoff_pca_batch` (one compiled vmap).
    """
    x = validate_data(x, k)
    arrays, start, opts = _options(x.shape, k, C, pi_prime, strength_factor, variant,
                                   n_knockoffs, method, tol, depth, max_cycles)  # fmt: skip
    if isinstance(x, jax.core.Tracer):  # inside jit/vmap: no value checks, no warnings
        if noise_variance == "estimate":
            sigma2, misfit = estimate_noise_variance(x)
        else:
            sigma2, misfit = jnp.asarray(float(noise_variance)), jnp.asarray(jnp.nan)
        return _knockoff_pca(x, key, sigma2, *arrays, start, opts)._replace(bulk_misfit=misfit)
    sigma2, misfit = _noise(x, noise_variance, batch=False)
    res = _knockoff_pca(x, key, sigma2, *arrays, start, opts)._replace(bulk_misfit=misfit)
    _warn_no_outlier(res, x.shape[0] / x.shape[1])
    return res


@partial(jax.jit, static_argnames=("opts",))
def _knockoff_pca_batch(xs, keys, sigma2, C, pi_prime, strength_factor, tol, start, opts):
    def one(x, key, s2):
        return _knockoff_pca(x, key, s2, C, pi_prime, strength_factor, tol, start, opts)

    return jax.vmap(one)(xs, keys, sigma2)


def knockoff_pca_batch(
    xs: object,
    keys: jax.Array,
    *,
    k: int = 10,
    C: float | None = None,
    pi_prime: float = 1.0,
    strength_factor: float = 2.0,
    variant: str = "eigenvalue",
    n_knockoffs: int = 1,
    noise_variance: float | str = "estimate",
    method: str = "auto",
    tol: float = 1e-3,
    depth: int = 6,
    max_cycles: int = 30,
    devices: object = None,
) -> KnockoffResult:
    """:func:`knockoff_pca` over a batch of trials xs (T, d, n) with one key per trial.

    The trials are sharded over ``devices`` (default: every local device) with a
    ``Mesh`` over the trial axis (:mod:`icml26.mspca.sharding`); T is padded to a
    multiple of the device count and the padding dropped, so the result is that of the
    one-device run. ``devices=1`` keeps everything on the first device.
    """
    arr = np.asarray(xs)
    if arr.ndim != 3:
        raise ValueError(f"xs must be a (trials, d, n) batch, got shape {arr.shape}")
    if arr.shape[0] < 1:
        raise ValueError("xs holds no trials")
    if len(keys) != arr.shape[0]:
        raise ValueError(f"need one key per trial: {arr.shape[0]} trials, {len(keys)} keys")
    validate_data(arr[0], k)  # dtype, shape and k
    if not np.all(np.isfinite(arr)):
        raise ValueError("data contains NaN or inf")
    arrays, start, opts = _options(arr.shape, k, C, pi_prime, strength_factor, variant,
                                   n_knockoffs, method, tol, depth, max_cycles)  # fmt: skip
    mesh = trial_mesh(devices)
    trials = arr.shape[0]
    if mesh is None:
        xs = jnp.asarray(arr, dtype=float)
        sigma2, misfit = _noise(xs, noise_variance, batch=True)
        res = _knockoff_pca_batch(xs, keys, sigma2, *arrays, start, opts)
        return res._replace(bulk_misfit=misfit)
    xs, keys = pad_trials((np.asarray(arr, dtype=float), keys), padded_count(trials, mesh))
    if isinstance(noise_variance, str) and noise_variance == "estimate":
        estimated = map_trials(_estimate_batch, mesh, (xs,))
        sigma2, misfit = _noise(xs, noise_variance, True, trials, estimated)
    else:
        sigma2, misfit = _noise(xs, noise_variance, batch=True, trials=trials)
    run = partial(_knockoff_pca_batch, opts=opts)
    res = map_trials(run, mesh, (xs, keys, sigma2), (*arrays, start))
    res = res._replace(bulk_misfit=misfit)
    return jax.tree.map(lambda a: a[:trials], res)


def alignment(u: jax.Array, reference: jax.Array) -> jax.Array:
    """|⟨u, ref⟩| for unit vectors along the last axis (the paper's metric)."""
    return jnp.abs(jnp.sum(u * reference, axis=-1))
