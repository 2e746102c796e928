"""A scikit-learn style front end to Algorithm 1.

At this boundary samples are **rows** (n_samples × n_features), as everywhere in
scikit-learn; the algorithm itself works on the paper's d × n layout with samples as
columns, and the transpose happens here, once. The data are *not* centered: the
method is defined on the uncentered second-moment matrix (centering would erase the
knockoff shift), and ``transform`` projects without centering too.
"""

from __future__ import annotations

import logging
import numbers

import jax
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from icml26.mspca.knockoff import KnockoffResult, knockoff_pca

log = logging.getLogger(__name__)


class MeanShiftPCA(TransformerMixin, BaseEstimator):
    """PCA that discards mean-shift components by a knockoff mean (Li, Li & Yao, 2026).

    Parameters mirror :func:`~icml26.mspca.knockoff.knockoff_pca`; ``n_components``
    is the number of *stable* components kept, in decreasing eigenvalue order.

    Attributes (after ``fit``):
        components_: (n_components, n_features) unit principal axes.
        explained_variance_: their eigenvalues of XᵀX/n (uncentered, data units).
        noise_variance_: σ̂² the data were divided by (see ``noise_variance``).
        eigenvalues_: the top-k eigenvalues that were tested, in units of σ̂².
        stable_mask_: (k,) which of them passed the stability test.
        displacement_: (k,) each eigenvalue's move under the knockoff, in units of ε.
        result_: the full :class:`~icml26.mspca.knockoff.KnockoffResult`.
    """

    def __init__(
        self,
        n_components: int = 1,
        *,
        k: int = 10,
        C: float | None = None,
        pi_prime: float = 1.0,
        strength_factor: float = 2.0,
        variant: str = "eigenvalue",
        n_knockoffs: int = 1,
        noise_variance: float | str = "estimate",
        method: str = "auto",
        random_state: int | np.random.Generator | None = 0,
    ):
        self.n_components = n_components
        self.k = k
        self.C = C
        self.pi_prime = pi_prime
        self.strength_factor = strength_factor
        self.variant = variant
        self.n_knockoffs = n_knockoffs
        self.noise_variance = noise_variance
        self.method = method
        self.random_state = random_state

    def _key(self) -> jax.Array:
        rs = self.random_state
        if rs is None:
            return jax.random.key(int(np.random.default_rng().integers(2**31)))
        if isinstance(rs, np.random.Generator):
            return jax.random.key(int(rs.integers(2**31)))
        if isinstance(rs, numbers.Integral) and not isinstance(rs, bool) and rs >= 0:
            return jax.random.key(int(rs))
        raise TypeError(
            f"random_state must be None, a non-negative int or a numpy Generator, got {rs!r}"
        )

    def fit(self, X: np.ndarray, y: object = None) -> MeanShiftPCA:
        """Fit on X (n_samples × n_features)."""
        X = _check_rows(X)
        n_samples = X.shape[0]
        if n_samples < 2:
            raise ValueError(f"need at least 2 samples (rows), got {n_samples}")
        k = self.k
        if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k (eigenpairs tested) must be a positive int, got {k!r}")
        if k > min(X.shape):
            raise ValueError(
                f"k = {k} eigenpairs tested exceeds min(n_samples, n_features) = {min(X.shape)}; "
                f"pass k ≤ {min(X.shape)}"
            )
        nc = self.n_components
        if not isinstance(nc, numbers.Integral) or isinstance(nc, bool) or nc < 1:
            raise ValueError(f"n_components must be a positive int, got {nc!r}")
        if nc > k:
            raise ValueError(f"n_components = {nc} exceeds the k = {k} eigenpairs tested")
        result: KnockoffResult = knockoff_pca(
            X.T, self._key(), k=k, C=self.C, pi_prime=self.pi_prime,
            strength_factor=self.strength_factor, variant=self.variant,
            n_knockoffs=self.n_knockoffs, noise_variance=self.noise_variance,
            method=self.method,
        )  # fmt: skip
        stable = np.asarray(result.stable)
        kept = np.flatnonzero(stable)
        if kept.size < self.n_components:
            raise ValueError(
                f"only {kept.size} of the top {k} eigenpairs are stable under the knockoff; "
                f"ask for fewer components or test more eigenpairs (k)"
            )
        dropped = np.flatnonzero(~stable[: kept[self.n_components - 1]])
        if dropped.size:
            log.info("dropped mean-shift components at indices %s", dropped.tolist())
        idx = kept[: self.n_components]
        self.result_ = result
        self.eigenvalues_ = np.asarray(result.eigenvalues)
        self.stable_mask_ = stable
        self.displacement_ = np.asarray(result.displacement)
        self.components_ = np.asarray(result.components)[:, idx].T
        self.noise_variance_ = float(result.noise_variance)
        self.explained_variance_ = self.eigenvalues_[idx] * self.noise_variance_
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Project X (n_samples × n_features) on the stable components (no centering)."""
        if not hasattr(self, "components_"):
            raise ValueError("this MeanShiftPCA is not fitted yet; call fit first")
        X = _check_rows(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must be (n_samples, {self.n_features_in_}), got shape {X.shape}")
        return X @ self.components_.T


def _check_rows(X: object) -> np.ndarray:
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise TypeError(f"X must be numeric, got dtype {X.dtype}")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.shape[1] < 1:
        raise ValueError(f"X has no features, shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or inf")
    return X.astype(float)
