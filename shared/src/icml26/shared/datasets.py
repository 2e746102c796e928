"""Data that several papers use and that needs no download.

- :func:`load_digits_split`: scikit-learn's bundled 8×8 digits (shipped inside the
  scikit-learn wheel), scaled to [0, 1], with a seeded stratified split.
- :func:`sample_gaussian_mixture`: draws from a Gaussian mixture with known labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DigitsSplit:
    """Images as flat rows of 64 pixels in [0, 1]; labels 0–9."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    def as_tensors(self, device: Any = None) -> tuple[Any, Any, Any, Any]:
        """The four arrays as torch tensors (float32 images, int64 labels); needs torch."""
        import torch

        def img(a: np.ndarray) -> Any:
            return torch.as_tensor(a, dtype=torch.float32, device=device)

        def lab(a: np.ndarray) -> Any:
            return torch.as_tensor(a, dtype=torch.int64, device=device)

        return img(self.x_train), lab(self.y_train), img(self.x_test), lab(self.y_test)


def load_digits_split(*, test_fraction: float = 0.25, seed: int = 0) -> DigitsSplit:
    """scikit-learn's digits (1,797 images), split with stratification by ``seed``."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    return DigitsSplit(x_tr, y_tr, x_te, y_te)


def sample_gaussian_mixture(
    rng: np.random.Generator,
    n: int,
    means: np.ndarray,
    covariances: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` points from a Gaussian mixture; returns ``(x (n, d), labels (n,))``.

    ``means`` is (k, d); ``covariances`` is (k, d, d) (identity when omitted);
    ``weights`` is (k,) summing to one (uniform when omitted).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    means = np.asarray(means, dtype=float)
    if means.ndim != 2:
        raise ValueError(f"means must be (k, d), got shape {means.shape}")
    k, d = means.shape
    if covariances is None:
        covariances = np.broadcast_to(np.eye(d), (k, d, d))
    covariances = np.asarray(covariances, dtype=float)
    if covariances.shape != (k, d, d):
        raise ValueError(f"covariances must be ({k}, {d}, {d}), got {covariances.shape}")
    if weights is None:
        weights = np.full(k, 1.0 / k)
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (k,) or np.any(weights < 0) or not np.isclose(weights.sum(), 1.0):
        raise ValueError(f"weights must be {k} non-negative numbers summing to 1, got {weights}")
    try:
        chol = np.linalg.cholesky(covariances)
    except np.linalg.LinAlgError:
        raise ValueError("every covariance must be symmetric positive definite") from None
    labels = rng.choice(k, size=n, p=weights)
    z = rng.standard_normal((n, d))
    x = means[labels] + np.einsum("nij,nj->ni", chol[labels], z)
    return x, labels
