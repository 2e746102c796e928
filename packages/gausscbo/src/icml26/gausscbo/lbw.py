"""The Linearized Bures–Wasserstein (LBW) space of Gaussians (Section 2.2, Appendix B).

Fix a reference covariance Σ⁰ ≻ 0. A Gaussian N(m, Σ) is represented by a tangent
vector (m, T) ∈ R^d × Sym_d through the (extended) BW exponential map

    Σ = exp_{Σ⁰}(T) = (I + T) Σ⁰ (I + T),                       (eq. 2 / Appendix B.2)

defined here for *every* symmetric T (so Σ is always PSD, at the price of
non-uniqueness), and the BW logarithm (the optimal-transport map minus I)

    log_{Σ⁰}(Σ) = Σ⁰^{-1/2} (Σ⁰^{1/2} Σ Σ⁰^{1/2})^{1/2} Σ⁰^{-1/2} − I.

The inner product is ⟨(m¹,T¹), (m²,T²)⟩ = m¹·m² + tr(T¹ Σ⁰ T²). With a basis of Sym_d
that is orthonormal for ⟨·,·⟩_{Σ⁰} (Appendix D.1), a tangent vector becomes a plain
coefficient vector z ∈ R^D, D = d + d(d+1)/2, and the LBW geometry is Euclidean
geometry on z: barycenters are weighted averages of z, Brownian motion is a standard
Brownian motion of z. :class:`LBWSpace` holds Σ⁰ and its basis and converts both ways.

For Σ⁰ = QΛQᵀ the basis is J̃_ii = Q e_i e_iᵀ Qᵀ / √λ_i and
J̃_ij = Q (e_i e_jᵀ + e_j e_iᵀ) Qᵀ / √(λ_i + λ_j) for i < j, so that
‖J̃_ij‖²_{Σ⁰} = tr(J̃_ij Σ⁰ J̃_ij) = 1. (Appendix D.1 prints the off-diagonal factor
as 1/√(λ_i+λ_j) applied to the already-normalised (e_i e_jᵀ + e_j e_iᵀ)/√2, which
gives norm 1/2 there; we use the normalisation that makes the basis orthonormal, which
reduces to the paper's J_ij for Σ⁰ = I.)
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from icml26.gausscbo.precision import with_float64

__all__ = [
    "LBWSpace",
    "bw_barycenter",
    "exp_map",
    "lbw_barycenter",
    "log_map",
    "matmul",
    "sym_sqrt",
]


def _check_square(a: jax.Array, name: str) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name} must be a (…, d, d) matrix, got shape {a.shape}")


def sym_sqrt(a: jax.Array, *, inverse: bool = False) -> jax.Array:
    """Symmetric square root (or inverse square root) of a symmetric PSD matrix, via eigh.

    Negative round-off eigenvalues are clipped at zero (at a tiny floor for the inverse).
    """
    w, q = jnp.linalg.eigh(a)
    w = jnp.clip(w, 0.0, None)
    s = 1.0 / jnp.sqrt(jnp.maximum(w, 1e-300)) if inverse else jnp.sqrt(w)
    return (q * s[..., None, :]) @ jnp.swapaxes(q, -1, -2)


def matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    """a @ b for small (…, d, d) matrices, written as a broadcast product and a sum.

    A batched ``@`` against an unbatched matrix is one XLA dot whose rows are computed
    by position-dependent kernels (vector body, scalar tail): a run's numbers would then
    depend on the batch it is in. The sum over j is the same for every batch size.
    """
    return jnp.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


def exp_map(t: jax.Array, sigma0: jax.Array) -> jax.Array:
    """Extended BW exponential map exp_{Σ⁰}(T) = (I+T) Σ⁰ (I+T), for any symmetric T."""
    eye = jnp.eye(t.shape[-1], dtype=t.dtype)
    a = eye + t
    return matmul(matmul(a, sigma0), a)


def log_map(sigma: jax.Array, sigma0: jax.Array) -> jax.Array:
    """BW logarithm log_{Σ⁰}(Σ): the OT map from N(0, Σ⁰) to N(0, Σ), minus I.

    Equals Σ(Σ⁰Σ)^{-1/2} − I (eq. logBW); computed in the symmetric form
    Σ⁰^{-1/2}(Σ⁰^{1/2} Σ Σ⁰^{1/2})^{1/2}Σ⁰^{-1/2} − I, which returns a symmetric matrix.
    """
    r = sym_sqrt(sigma0)
    r_inv = sym_sqrt(sigma0, inverse=True)
    mid = sym_sqrt(r @ sigma @ r)
    t = r_inv @ mid @ r_inv - jnp.eye(sigma.shape[-1], dtype=sigma.dtype)
    return 0.5 * (t + jnp.swapaxes(t, -1, -2))


def lbw_barycenter(
    means: jax.Array, ts: jax.Array, weights: jax.Array, sigma0: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Weighted LBW barycenter (eq. LBWbary): (Σ ω_i m_i, T̄ = Σ ω_i T_i, exp_{Σ⁰}(T̄)).

    ``means`` (N, d), ``ts`` (N, d, d), ``weights`` (N,) summing to one.
    """
    w = weights / jnp.sum(weights)
    m_bar = jnp.einsum("n,nd->d", w, means)
    t_bar = jnp.einsum("n,nij->ij", w, ts)
    return m_bar, t_bar, exp_map(t_bar, sigma0)


def bw_barycenter(
    covs: jax.Array, weights: jax.Array, *, iters: int = 200, init: jax.Array | None = None
) -> jax.Array:
    """The (exact) Bures–Wasserstein barycenter of zero-mean Gaussians, for comparison.

    Fixed-point iteration of Álvarez-Esteban et al. (2016):
    S ← S^{-1/2} (Σ_i ω_i (S^{1/2} Σ_i S^{1/2})^{1/2})² S^{-1/2}.
    """
    w = weights / jnp.sum(weights)
    s0 = jnp.einsum("n,nij->ij", w, covs) if init is None else init

    def body(s, _):
        r = sym_sqrt(s)
        r_inv = sym_sqrt(s, inverse=True)
        inner = jnp.einsum("n,nij->ij", w, jax.vmap(lambda c: sym_sqrt(r @ c @ r))(covs))
        s_new = r_inv @ inner @ inner @ r_inv
        return 0.5 * (s_new + s_new.T), None

    s, _ = jax.lax.scan(body, s0, None, length=iters)
    return s


def _basis(sigma0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal basis e of (Sym_d, ⟨·,·⟩_{Σ⁰}) as an (L, d, d) array, and Σ⁰ e_ℓ.

    Ordering: the d diagonal elements first, then the pairs i < j in row-major order,
    so that for Σ⁰ = I the coefficients of T are (T_11, …, T_dd, √2 T_12, …).
    Coefficients are c_ℓ = ⟨T, e_ℓ⟩_{Σ⁰} = tr(T Σ⁰ e_ℓ), hence the second array.
    For Σ⁰ = I exactly, Q = I is used so that e is the paper's J basis.
    """
    d = sigma0.shape[0]
    if np.array_equal(sigma0, np.eye(d)):
        lam, q = np.ones(d), np.eye(d)
    else:
        lam, q = np.linalg.eigh(sigma0)
    mats = []
    for i in range(d):
        e = np.zeros((d, d))
        e[i, i] = 1.0
        mats.append(q @ e @ q.T / np.sqrt(lam[i]))
    for i in range(d):
        for j in range(i + 1, d):
            e = np.zeros((d, d))
            e[i, j] = e[j, i] = 1.0
            # ‖Q E_ij Qᵀ‖²_{Σ⁰} = λ_i + λ_j for the unnormalised E_ij = e_i e_jᵀ + e_j e_iᵀ
            mats.append(q @ e @ q.T / np.sqrt(lam[i] + lam[j]))
    basis = np.stack(mats) if mats else np.zeros((0, d, d))
    return basis, np.einsum("ij,ljk->lik", sigma0, basis)


def _basis_traced(sigma0: jax.Array) -> tuple[jax.Array, jax.Array]:
    """:func:`_basis` in jnp, for a reference that changes inside a jitted loop."""
    d = sigma0.shape[0]
    lam, q = jnp.linalg.eigh(sigma0)
    diag = jnp.einsum("ik,jk->kij", q, q) / jnp.sqrt(lam)[:, None, None]
    iu, ju = np.triu_indices(d, k=1)
    qi, qj = q[:, iu], q[:, ju]
    off = (jnp.einsum("ik,jk->kij", qi, qj) + jnp.einsum("ik,jk->kij", qj, qi)) / jnp.sqrt(
        lam[iu] + lam[ju]
    )[:, None, None]
    basis = jnp.concatenate([diag, off], axis=0)
    return basis, jnp.einsum("ij,ljk->lik", sigma0, basis)


@jax.tree_util.register_dataclass
@dataclass(frozen=True, eq=False)
class LBWSpace:
    """The LBW space at a reference Σ⁰: maps between (m, T), (m, Σ) and coefficients z.

    ``z = (m, c)`` with ``c_ℓ = ⟨T, e_ℓ⟩_{Σ⁰}`` in the orthonormal basis ``e``. Build with
    :meth:`create`; arrays are float64 when x64 is enabled.
    """

    sigma0: jax.Array
    basis: jax.Array  # (L, d, d), orthonormal for ⟨·,·⟩_{Σ⁰}
    gram: jax.Array  # (L, d, d), Σ⁰ e_ℓ: c_ℓ = tr(T Σ⁰ e_ℓ) = Σ_ij T_ij (Σ⁰ e_ℓ)_ji

    @classmethod
    def from_reference(cls, sigma0: jax.Array) -> LBWSpace:
        """Traceable constructor (inside jit), used when the reference is updated."""
        basis, gram = _basis_traced(sigma0)
        return cls(sigma0=sigma0, basis=basis, gram=gram)

    @classmethod
    @with_float64
    def create(cls, sigma0: object | None = None, *, d: int | None = None) -> LBWSpace:
        """The space at reference ``sigma0`` (SPD, (d, d)); ``sigma0=None`` means I_d."""
        if sigma0 is None:
            if d is None or int(d) < 1:
                raise ValueError(f"give sigma0 or a positive dimension d, got d={d!r}")
            s0 = np.eye(int(d))
        else:
            s0 = np.asarray(sigma0, dtype=np.float64)
            if s0.ndim != 2 or s0.shape[0] != s0.shape[1]:
                raise ValueError(f"sigma0 must be a square (d, d) matrix, got shape {s0.shape}")
            if d is not None and s0.shape[0] != d:
                raise ValueError(f"sigma0 is {s0.shape[0]}-dimensional, but d={d}")
            if not np.all(np.isfinite(s0)):
                raise ValueError("sigma0 contains NaN or inf")
            if not np.allclose(s0, s0.T, atol=1e-10 * max(1.0, np.abs(s0).max())):
                raise ValueError("sigma0 must be symmetric")
            s0 = 0.5 * (s0 + s0.T)
            lam_min = np.linalg.eigvalsh(s0).min()
            if lam_min <= 0:
                raise ValueError(
                    f"sigma0 must be positive definite (smallest eigenvalue {lam_min:.3g})"
                )
        basis, gram = _basis(s0)
        return cls(sigma0=jnp.asarray(s0), basis=jnp.asarray(basis), gram=jnp.asarray(gram))

    # -- sizes --------------------------------------------------------------------
    @property
    def d(self) -> int:
        return int(self.sigma0.shape[0])

    @property
    def n_sym(self) -> int:
        """d(d+1)/2, the dimension of Sym_d."""
        return int(self.basis.shape[0])

    @property
    def dim(self) -> int:
        """D = d + d(d+1)/2, the dimension of the coefficient vector z = (m, c)."""
        return self.d + self.n_sym

    # -- maps ---------------------------------------------------------------------
    def exp(self, t: jax.Array) -> jax.Array:
        return exp_map(t, self.sigma0)

    def log(self, sigma: jax.Array) -> jax.Array:
        return log_map(sigma, self.sigma0)

    def coeffs(self, t: jax.Array) -> jax.Array:
        """Coefficients c_ℓ = ⟨T, e_ℓ⟩_{Σ⁰} of a symmetric T (…, d, d) → (…, L)."""
        # Σ_ij T_ij G_lji as a broadcast product and a sum (batch-size invariant, see
        # :func:`matmul`)
        prod = t[..., None, :, :] * jnp.swapaxes(self.gram, -1, -2)
        return jnp.sum(prod.reshape(*prod.shape[:-2], -1), axis=-1)

    def matrix(self, c: jax.Array) -> jax.Array:
        """T = Σ_ℓ c_ℓ e_ℓ from coefficients (…, L) → (…, d, d)."""
        return jnp.sum(c[..., :, None, None] * self.basis, axis=-3)

    def inner(self, t1: jax.Array, t2: jax.Array) -> jax.Array:
        """⟨T¹, T²⟩_{Σ⁰} = tr(T¹ Σ⁰ T²)."""
        return jnp.einsum("...ij,jk,...ki->...", t1, self.sigma0, t2)

    def to_z(self, m: jax.Array, t: jax.Array) -> jax.Array:
        """(m, T) → z = (m, c) ∈ R^D."""
        return jnp.concatenate([m, self.coeffs(t)], axis=-1)

    def split(self, z: jax.Array) -> tuple[jax.Array, jax.Array]:
        """z → (m, T)."""
        return z[..., : self.d], self.matrix(z[..., self.d :])

    def gaussian(self, z: jax.Array) -> tuple[jax.Array, jax.Array]:
        """z → (m, Σ) with Σ = exp_{Σ⁰}(T)."""
        m, t = self.split(z)
        return m, self.exp(t)

    def encode(self, m: jax.Array, sigma: jax.Array) -> jax.Array:
        """(m, Σ) → z, using T = log_{Σ⁰}(Σ) (Σ must be positive definite)."""
        return self.to_z(m, self.log(sigma))

    def random_sym(self, key: jax.Array, shape: tuple[int, ...] = ()) -> jax.Array:
        """A standard normal element of (Sym_d, ⟨·,·⟩_{Σ⁰}): Σ_ℓ ξ_ℓ e_ℓ with ξ ~ N(0, I).

        For Σ⁰ = I this is (Ξ + Ξᵀ)/2 with Ξ_ij ~ N(0, 1) (Appendix D.1).
        """
        xi = jax.random.normal(key, (*shape, self.n_sym), dtype=self.sigma0.dtype)
        return self.matrix(xi)
