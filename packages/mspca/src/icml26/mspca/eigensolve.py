"""Top-k eigenpairs of the uncentered sample covariance S = XXᵀ/n, without a full SVD.

Three solvers, all jit-compiled and vmappable:

- ``"krylov"`` (default for large inputs): restarted randomized block Krylov
  iteration (Musco & Musco 2015; Golub & Ye 2002). Each cycle builds the Krylov space
  [Q, SQ, …, S^{depth−1}Q] of a block of b = k + 10 columns, takes the Rayleigh–Ritz
  pairs in it and restarts from the top b Ritz vectors, until every one of the top k
  Ritz residuals ‖Sz − θz‖ is below ``tol``·θ₁ (a residual r puts a true eigenvalue
  within ‖r‖ of θ) or ``max_cycles`` is reached. A warm start (``start``) reuses a
  previous subspace: the knockoff solve starts from the first solve's Ritz vectors
  plus the knockoff direction and converges in a cycle or two.
- ``"gram"``: dense ``eigh`` of the smaller Gram matrix (d × d or n × n): exact,
  O(min(d, n)³), for small problems and as the reference in tests. ``"auto"`` picks
  it when min(d, n) ≤ 256.
- :func:`official_randomized_svd`: the official code's solver, scikit-learn's
  ``TruncatedSVD(n_components=k, n_iter=7, random_state=42)`` (randomized range
  finder with 7 power iterations and 10 oversamples, the same Gaussian start for
  every call), used by ``variant="official_sv"``.

:func:`exact_top_eigenpairs` is the exact solver outside JAX (ARPACK), for reference
values and the numpy baselines.

Data are d × n with samples as columns (the paper's convention).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse.linalg

METHODS = ("auto", "krylov", "gram")
GRAM_MAX = 256  # "auto" uses the exact Gram solver up to this min(d, n)


def resolve_method(method: str, shape: tuple[int, ...]) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        return "gram" if min(shape[-2:]) <= GRAM_MAX else "krylov"
    return method


def _gram_top(x: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    d, n = x.shape
    if d <= n:
        w, v = jnp.linalg.eigh(x @ x.T / n)
        return w[::-1][:k], v[:, ::-1][:, :k]
    w, v = jnp.linalg.eigh(x.T @ x / n)
    w, v = w[::-1][:k], v[:, ::-1][:, :k]
    # Left singular vectors from the right ones: u = X v / sqrt(n λ).
    u = x @ v / jnp.sqrt(n * jnp.maximum(w, jnp.finfo(x.dtype).tiny))
    return w, u / jnp.linalg.norm(u, axis=0, keepdims=True)


def _orthonormalize(y: jax.Array) -> jax.Array:
    """An orthonormal basis of span(Y) from the eigendecomposition of the small Gram YᵀY.

    Two passes (like CholeskyQR2) restore orthogonality to machine precision. This uses
    only matrix products and a b × b ``eigh``: on CPU, jaxlib's Householder QR is about
    a hundred times slower than numpy's for a tall thin matrix.
    """
    for _ in range(2):
        w, v = jnp.linalg.eigh(y.T @ y)
        floor = jnp.max(w) * jnp.finfo(y.dtype).eps
        y = y @ (v / jnp.sqrt(jnp.maximum(w, floor)))
    return y


def _operator(x: jax.Array):
    """S on the smaller side: XXᵀ/n on R^d when d ≤ n, else XᵀX/n on R^n."""
    d, n = x.shape
    if d <= n:
        return lambda q: x @ (x.T @ q) / n
    return lambda q: x.T @ (x @ q) / n


def _to_left(x: jax.Array, w: jax.Array, z: jax.Array) -> jax.Array:
    """Left singular vectors of X from eigenvectors of whichever side was iterated."""
    d, n = x.shape
    if d <= n:
        return z
    u = x @ z / jnp.sqrt(n * jnp.maximum(w, jnp.finfo(x.dtype).tiny))
    return u / jnp.linalg.norm(u, axis=0, keepdims=True)


def _krylov_cycle(op, q: jax.Array, depth: int):
    """One cycle: Rayleigh–Ritz on [Q, SQ, …, S^{depth−1}Q]; returns the top b Ritz
    vectors, their values and residual norms (descending)."""
    b = q.shape[1]
    blocks, images = [q], []
    for j in range(depth):
        w = op(blocks[-1])
        images.append(w)
        if j < depth - 1:
            basis = jnp.concatenate(blocks, axis=1)
            for _ in range(2):  # block Gram–Schmidt, twice ("twice is enough")
                w = w - basis @ (basis.T @ w)
            blocks.append(_orthonormalize(w))
    v, sv = jnp.concatenate(blocks, axis=1), jnp.concatenate(images, axis=1)
    t = v.T @ sv
    theta, y = jnp.linalg.eigh(0.5 * (t + t.T))
    theta, y = theta[::-1][:b], y[:, ::-1][:, :b]
    z, sz = v @ y, sv @ y
    resid = jnp.linalg.norm(sz - z * theta, axis=0)
    return z, theta, resid


def _krylov_top(x, k, start, depth, tol, atol, max_cycles):
    """Restarted block Krylov: stop when the top-k Ritz values moved by less than the
    tolerance over the last cycle, or when all their residuals are below it."""
    op = _operator(x)
    q = _orthonormalize(start)

    def cond(state):
        _, theta, previous, resid, cycles = state
        limit = tol * theta[0] if atol is None else atol
        moved = jnp.max(jnp.abs(theta[:k] - previous[:k]))
        converged = (moved < limit) | (jnp.max(resid[:k]) < limit)
        return (cycles < max_cycles) & ~converged

    def body(state):
        z, theta, _, _, cycles = state
        z, new, resid = _krylov_cycle(op, z, depth)
        return z, new, theta, resid, cycles + 1

    z, theta, resid = _krylov_cycle(op, q, depth)
    state = (z, theta, jnp.full_like(theta, jnp.inf), resid, 1)
    z, theta, _, resid, cycles = jax.lax.while_loop(cond, body, state)
    return theta[:k], _to_left(x, theta[:k], z[:, :k]), z, cycles


def solver_space(x_shape: tuple[int, ...]) -> int:
    """Dimension of the space the Krylov solver iterates in (min(d, n))."""
    return min(x_shape[-2:])


@partial(jax.jit, static_argnames=("k", "method", "depth", "max_cycles", "block"))
def top_eigenpairs(
    x: jax.Array,
    k: int,
    key: jax.Array | None = None,
    *,
    method: str = "auto",
    start: jax.Array | None = None,
    depth: int = 4,
    tol: float = 1e-5,
    max_cycles: int = 30,
    block: int | None = None,
) -> tuple[jax.Array, jax.Array]:
    """The k largest eigenvalues (descending) of XXᵀ/n and their unit eigenvectors (d, k).

    ``key`` seeds the random start of the Krylov solver (ignored by ``"gram"``);
    ``start`` (min(d, n) × b) replaces the random start; ``block`` defaults to k + 10.
    """
    return top_eigenpairs_full(
        x, k, key, method=method, start=start, depth=depth, tol=tol, max_cycles=max_cycles,
        block=block,
    )[:2]  # fmt: skip


def top_eigenpairs_full(
    x, k, key=None, *, method="auto", start=None, depth=4, tol=1e-5, atol=None, max_cycles=30,
    block=None,
):  # fmt: skip
    """:func:`top_eigenpairs` plus the solver's final block (for warm starts) and the
    number of Krylov cycles it took (0 for ``"gram"``). ``atol``, when given, replaces
    the relative residual test ``tol``·θ₁ by an absolute one."""
    method = resolve_method(method, x.shape)
    if method == "gram":
        w, u = _gram_top(x, k)
        return w, u, None, jnp.asarray(0)
    m = solver_space(x.shape)
    b = min(block or k + 10, m)
    b = max(b, k)
    if start is None:
        if key is None:
            key = jax.random.key(0)
        start = jax.random.normal(key, (m, b), dtype=x.dtype)
    depth = max(1, min(depth, m // b))  # the Krylov space must fit in R^m
    return _krylov_top(x, k, start, depth, tol, atol, max_cycles)


# --- The official code's solver ------------------------------------------------------

OFFICIAL_N_ITER = 7
OFFICIAL_OVERSAMPLES = 10
OFFICIAL_SEED = 42


def official_start(d: int, n: int, k: int) -> np.ndarray:
    """The Gaussian start of ``TruncatedSVD(n_components=k, n_iter=7, random_state=42)``
    fitted on the n × d matrix X̃ᵀ/√n: RandomState(42).normal of shape (d, k + 10), or
    (n, k + 10) when scikit-learn transposes a wide input (n < d)."""
    rows = n if n < d else d
    return np.random.RandomState(OFFICIAL_SEED).normal(size=(rows, k + OFFICIAL_OVERSAMPLES))


def official_randomized_svd(
    x: jax.Array, k: int, start: jax.Array, n_iter: int = OFFICIAL_N_ITER
) -> tuple[jax.Array, jax.Array]:
    """Top-k singular values of X/√n and left singular vectors (d, k), computed as
    scikit-learn's ``TruncatedSVD(algorithm="randomized")`` does on M = X̃ᵀ/√n.

    scikit-learn normalizes the power iterations by LU and the last step by QR; only
    the spanned subspaces enter the result, so any orthonormalization gives the same
    numbers up to rounding. Traceable and vmappable; ``start`` is :func:`official_start`.
    """
    d, n = x.shape
    a = x.T / jnp.sqrt(n)  # M, n × d: samples as rows, as the official code fits it
    transpose = n < d  # scikit-learn's transpose="auto"
    if transpose:
        a = a.T
    q = start
    for _ in range(n_iter):
        q = _orthonormalize(a @ q)
        q = _orthonormalize(a.T @ q)
    q = _orthonormalize(a @ q)
    uhat, s, vt = jnp.linalg.svd(q.T @ a, full_matrices=False)
    if transpose:  # a = X/√n: its left singular vectors are Q Û
        return s[:k], (q @ uhat)[:, :k]
    return s[:k], vt[:k].T


def exact_top_eigenpairs(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenpairs of XXᵀ/n in numpy, converged to 1e-10 relative (descending).

    ARPACK's Lanczos (``scipy.sparse.linalg.svds``) on X itself: no Gram matrix and no
    tridiagonalisation of the whole spectrum. Tiny matrices use a dense ``eigh``.
    """
    x = np.asarray(x, dtype=float)
    d, n = x.shape
    if min(d, n) <= max(2 * k + 1, 32):
        small = x @ x.T / n if d <= n else x.T @ x / n
        w, v = np.linalg.eigh(small)
        w, v = w[::-1][:k], v[:, ::-1][:, :k]
        if d > n:
            v = x @ v / np.sqrt(n * np.maximum(w, np.finfo(float).tiny))
            v /= np.linalg.norm(v, axis=0, keepdims=True)
        return w, v
    # A fixed start vector makes ARPACK deterministic.
    u, s, _ = scipy.sparse.linalg.svds(x / np.sqrt(n), k=k, tol=1e-10, v0=np.ones(min(d, n)))
    order = np.argsort(s)[::-1]
    return s[order] ** 2, u[:, order]
