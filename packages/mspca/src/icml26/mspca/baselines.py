"""The PCA estimators the paper compares against (official ``rebuttal.py``), plus the
two robust-PCA families the paper mentions.

Each baseline maps a d × n matrix X̃ (samples as columns, as in the paper) to a unit
d-vector estimating the leading principal component. The official calls:

================  ===========================================================
uncentered PCA    top left singular vector of X̃/√n
centered PCA      ``sklearn.decomposition.PCA(n_components=1).fit(X̃ᵀ)``
RPCA-AAP          ``rpca.RobustPCA(n_components=1).fit(X̃).low_rank_[:, 0]``
Tyler, Huber      ``pyriemann`` ``covariance_mest(X̃, "tyl" | "hub")``, top eigenvector
ℓ1-PCA            bit flipping (Markopoulos et al., 2017), K = 1
winsorized PCA    ``scipy.stats.mstats.winsorize`` then the top singular vector
================  ===========================================================

and, not in the official code: principal component pursuit (Candès et al., 2011)
by the inexact augmented Lagrangian method, and spherical PCA (PCA of the samples
projected onto the unit sphere around their spatial median).

"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from icml26.mspca.eigensolve import exact_top_eigenpairs
from icml26.mspca.knockoff import validate_data


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=float).ravel()
    norm = np.linalg.norm(v)
    if not np.isfinite(norm) or norm == 0:
        raise ValueError("the estimator returned a zero or non-finite direction")
    return v / norm


def _top_eigenvector(matrix: np.ndarray) -> np.ndarray:
    """Top eigenvector of a symmetric matrix by Lanczos (ARPACK), deterministic start."""
    from scipy.sparse.linalg import eigsh

    m = np.asarray(matrix, dtype=float)
    if m.shape[0] <= 32:
        return _unit(np.linalg.eigh(m)[1][:, -1])
    _, v = eigsh(m, k=1, which="LA", tol=0, v0=np.ones(m.shape[0]))
    return _unit(v[:, 0])


def _top_left_vector(x: np.ndarray) -> np.ndarray:
    return _unit(exact_top_eigenpairs(x, 1)[1][:, 0])


def uncentered_pca(x: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """Top eigenvector of X̃X̃ᵀ/n (no centering): the mean shift's own direction wins."""
    return _top_left_vector(np.asarray(validate_data(x)))


def centered_pca(x: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """scikit-learn's PCA (centers the samples), as called in the official code."""
    from sklearn.decomposition import PCA

    x = np.asarray(validate_data(x))
    return _unit(PCA(n_components=1, random_state=seed).fit(x.T).components_[0])


def rpca_aap(x: np.ndarray, *, seed: int = 0, max_iter: int = 100) -> np.ndarray:
    """RPCA by accelerated alternating projections (Cai et al.), PyPI ``rpca``.

    The official code reads the direction off the first column of the low-rank part.
    Here it is the top left singular vector of the whole low-rank part, which is the
    same direction when that part has rank one and is defined when column 0 is zero.
    """
    from rpca import RobustPCA

    x = np.asarray(validate_data(x))
    model = RobustPCA(n_components=1, max_iter=max_iter, verbose=False)
    with contextlib.redirect_stdout(io.StringIO()):  # rpca prints even when not verbose
        model.fit(x)
    return _top_left_vector(np.asarray(model.low_rank_))


def _covariance_mest(x: np.ndarray, estimator: str) -> np.ndarray:
    try:
        from pyriemann.geometry.covariance import covariance_mest
    except ImportError:  # pyriemann < 0.12
        from pyriemann.utils.covariance import covariance_mest
    return np.asarray(covariance_mest(x, estimator))


def tyler(x: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """Tyler's M-estimator of scatter (``pyriemann``), then its top eigenvector."""
    return _top_eigenvector(_covariance_mest(np.asarray(validate_data(x)), "tyl"))


def huber(x: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """Huber's M-estimator of scatter (``pyriemann``), then its top eigenvector.

    Slow at d ≈ n (hundreds of seconds at d = 900): the ``paper`` preset only.
    """
    return _top_eigenvector(_covariance_mest(np.asarray(validate_data(x)), "hub"))


def winsorized_pca(x: np.ndarray, *, seed: int = 0, limit: float = 0.05) -> np.ndarray:
    """Clip each feature to its [limit, 1 − limit] sample quantiles, then uncentered PCA.

    The official call ``winsorize(X̃, axis=0)`` passes no limits, which clips nothing
    (it equals uncentered PCA); we winsorize each feature across samples at 5%.
    """
    from scipy.stats.mstats import winsorize

    x = np.asarray(validate_data(x))
    if not 0 <= limit < 0.5:
        raise ValueError(f"limit must lie in [0, 0.5), got {limit}")
    clipped = np.asarray(winsorize(x, limits=(limit, limit), axis=1))
    return _top_left_vector(clipped)


def l1_pca(
    x: np.ndarray, *, seed: int = 0, n_init: int = 10, max_flips: int | None = None
) -> np.ndarray:
    """ℓ1-norm PCA (K = 1) by bit flipping (Markopoulos, Kundu, Chamadia & Pados, 2017).

    The L1 principal component is q = X̃b/‖X̃b‖ for b ∈ {±1}ⁿ maximising ‖X̃b‖₂.
    Each step flips the single bit with the largest gain, using the Gram matrix
    G = X̃ᵀX̃: flipping bit i changes bᵀGb by 4(G_ii − b_i(Gb)_i). The first start
    is sign(v₁) of the top right singular vector, as in the authors' code; the
    others are random (the official script uses 100 starts).
    """
    x = np.asarray(validate_data(x))
    if n_init < 1:
        raise ValueError(f"n_init must be at least 1, got {n_init}")
    n = x.shape[1]
    gram = x.T @ x
    diag = np.diag(gram)
    rng = np.random.default_rng(seed)
    # sign of the top right singular vector v₁ = X̃ᵀu₁/‖X̃ᵀu₁‖ (only its signs matter)
    v1 = x.T @ exact_top_eigenpairs(x, 1)[1][:, 0]
    starts = [np.sign(v1) + (v1 == 0)] + [
        rng.choice([-1.0, 1.0], size=n) for _ in range(n_init - 1)
    ]
    best_b, best_val = None, -np.inf
    for b in starts:
        b = b.astype(float)
        gb = gram @ b
        for _ in range(max_flips or 10 * n):
            gains = 4.0 * (diag - b * gb)
            i = int(np.argmax(gains))
            if gains[i] <= 1e-10 * max(1.0, float(b @ gb)):
                break
            gb -= 2.0 * b[i] * gram[:, i]
            b[i] = -b[i]
        val = float(b @ gb)
        if val > best_val:
            best_b, best_val = b.copy(), val
    return _unit(x @ best_b)


def spherical_pca(
    x: np.ndarray, *, seed: int = 0, iters: int = 200, tol: float = 1e-9
) -> np.ndarray:
    """Spherical PCA: project samples onto the unit sphere around the spatial median
    (Weiszfeld iterations), then take the top eigenvector of the projected covariance."""
    x = np.asarray(validate_data(x))
    med = np.median(x, axis=1)
    for _ in range(iters):
        dist = np.maximum(np.linalg.norm(x - med[:, None], axis=0), 1e-12)
        new = (x / dist).sum(axis=1) / (1.0 / dist).sum()
        done = np.linalg.norm(new - med) <= tol * max(1.0, np.linalg.norm(med))
        med = new
        if done:
            break
    y = x - med[:, None]
    y = y / np.maximum(np.linalg.norm(y, axis=0, keepdims=True), 1e-12)
    return _top_left_vector(y)


def pcp(x: np.ndarray, *, seed: int = 0, max_iter: int = 200, tol: float = 1e-7) -> np.ndarray:
    """Principal component pursuit, min ‖L‖_* + λ‖S‖₁ s.t. L + S = X̃ (Candès, Li, Ma &
    Wright, 2011), by the inexact augmented Lagrangian method (Lin, Chen & Ma, 2010)
    with λ = 1/√max(d, n), μ = dn/(4‖X̃‖₁); the estimate is the top left singular
    vector of L. One thin SVD per iteration: the ``paper`` preset only at d = 900.
    """
    x = np.asarray(validate_data(x))
    d, n = x.shape
    lam = 1.0 / np.sqrt(max(d, n))
    mu = d * n / (4.0 * np.abs(x).sum())
    norm_x = np.linalg.norm(x)
    low, sparse, dual = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    for _ in range(max_iter):
        # L-step: singular value thresholding at 1/μ
        u, s, vt = np.linalg.svd(x - sparse + dual / mu, full_matrices=False)
        low = (u * np.maximum(s - 1.0 / mu, 0.0)) @ vt
        # S-step: entrywise soft thresholding at λ/μ
        resid = x - low + dual / mu
        sparse = np.sign(resid) * np.maximum(np.abs(resid) - lam / mu, 0.0)
        gap = x - low - sparse
        dual += mu * gap
        if np.linalg.norm(gap) <= tol * norm_x:
            break
    return _top_left_vector(low)


Estimator = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Baseline:
    """A named estimator; ``fit(x, seed=...)`` maps X̃ (d × n) to a unit PC1 estimate."""

    name: str
    fit: Estimator


BASELINES: dict[str, Baseline] = {
    b.name: b
    for b in (
        Baseline("centered PCA", centered_pca),
        Baseline("uncentered PCA", uncentered_pca),
        Baseline("winsorized PCA", winsorized_pca),
        Baseline("spherical PCA", spherical_pca),
        Baseline("l1-PCA", l1_pca),
        Baseline("PCP", pcp),
        Baseline("RPCA-AAP", rpca_aap),
        Baseline("Tyler", tyler),
        Baseline("Huber", huber),
    )
}
