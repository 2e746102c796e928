"""Metrics that several papers share.

Every function checks its inputs and raises ``ValueError`` saying what it expected
and what it got; none returns NaN for bad input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats
from scipy.spatial.distance import cdist


# -- input checks ---------------------------------------------------------------------
def _vector(x: object, name: str, *, min_len: int = 1) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.shape[0] < min_len:
        raise ValueError(f"{name} needs at least {min_len} entries, got {arr.shape[0]}")
    return arr


def _finite(arr: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(arr, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def _pair(a: object, b: object, names: tuple[str, str], *, min_len: int = 1):
    a = _vector(a, names[0], min_len=min_len)
    b = _vector(b, names[1], min_len=min_len)
    if a.shape != b.shape:
        raise ValueError(
            f"{names[0]} and {names[1]} differ in length: {a.shape[0]} vs {b.shape[0]}"
        )
    return a, b


def _labels(y: object, name: str) -> np.ndarray:
    arr = _vector(y, name)
    if arr.dtype.kind not in "iub":
        as_int = np.asarray(arr)
        if (
            arr.dtype.kind == "f"
            and np.all(np.isfinite(arr))
            and np.all(as_int == np.round(as_int))
        ):
            return as_int.astype(np.int64)
        raise ValueError(f"{name} must hold integer labels, got dtype {arr.dtype}")
    return arr.astype(np.int64)


# -- clustering -------------------------------------------------------------------------
def _hungarian_map(y_true: np.ndarray, y_pred: np.ndarray) -> dict[int, int]:
    """The cluster -> class map maximising the number of matched samples."""
    classes, t = np.unique(y_true, return_inverse=True)
    clusters, p = np.unique(y_pred, return_inverse=True)
    size = max(len(classes), len(clusters))
    counts = np.zeros((size, size), dtype=np.int64)
    np.add.at(counts, (p, t), 1)
    rows, cols = optimize.linear_sum_assignment(counts, maximize=True)
    return {
        int(clusters[r]): int(classes[c])
        for r, c in zip(rows, cols, strict=True)
        if r < len(clusters) and c < len(classes)
    }


def cluster_accuracy(y_true: Sequence[int], y_pred: Sequence[int]) -> float:
    """Accuracy under the best one-to-one map of clusters to classes (Hungarian)."""
    y_true, y_pred = _pair(
        _labels(y_true, "y_true"), _labels(y_pred, "y_pred"), ("y_true", "y_pred")
    )
    mapping = _hungarian_map(y_true, y_pred)
    mapped = np.array([mapping.get(int(c), -(10**9)) for c in y_pred])
    return float(np.mean(mapped == y_true))


@dataclass(frozen=True)
class CategoryAccuracy:
    """Clustering accuracy for generalized category discovery: all, known, novel."""

    all: float
    old: float
    new: float


def category_discovery_accuracy(
    y_true: Sequence[int], y_pred: Sequence[int], old_classes: Sequence[int]
) -> CategoryAccuracy:
    """All/Old/New accuracy of the GCD protocol (Vaze et al., 2022).

    One Hungarian map is computed on all samples; Old and New are the accuracies of
    that same map on the samples whose true class is known or novel.
    """
    y_true, y_pred = _pair(
        _labels(y_true, "y_true"), _labels(y_pred, "y_pred"), ("y_true", "y_pred")
    )
    old = np.isin(y_true, np.asarray(list(old_classes), dtype=np.int64))
    if not old.any() or old.all():
        raise ValueError("y_true must contain both old and new classes for an Old/New split")
    mapping = _hungarian_map(y_true, y_pred)
    hit = np.array([mapping.get(int(c), -(10**9)) for c in y_pred]) == y_true
    return CategoryAccuracy(
        all=float(hit.mean()), old=float(hit[old].mean()), new=float(hit[~old].mean())
    )


# -- distributions --------------------------------------------------------------------
def _samples(x: object, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"{name} must be (n_samples, n_features), got shape {np.shape(x)}")
    return _finite(arr, name)


def median_bandwidth(x: np.ndarray, y: np.ndarray) -> float:
    """The median heuristic: the median pairwise distance of the pooled samples."""
    z = np.concatenate([_samples(x, "x"), _samples(y, "y")])
    d = cdist(z, z)
    off = d[np.triu_indices_from(d, k=1)]
    med = float(np.median(off)) if off.size else 0.0
    return med if med > 0 else 1.0


def mmd2_rbf(
    x: object, y: object, *, bandwidth: float | None = None, unbiased: bool = False
) -> float:
    """Squared maximum mean discrepancy with k(a, b) = exp(-|a-b|² / (2 h²)).

    ``bandwidth`` h defaults to the median heuristic on the pooled samples. The
    default biased (V-statistic) estimate is zero for identical samples and never
    negative; ``unbiased=True`` gives the U-statistic (Gretton et al., 2012), which
    can dip below zero.
    """
    x, y = _samples(x, "x"), _samples(y, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y differ in dimension: {x.shape[1]} vs {y.shape[1]}")
    if unbiased and (len(x) < 2 or len(y) < 2):
        raise ValueError("the unbiased estimate needs at least 2 samples on each side")
    h = median_bandwidth(x, y) if bandwidth is None else float(bandwidth)
    if not np.isfinite(h) or h <= 0:
        raise ValueError(f"bandwidth must be positive and finite, got {bandwidth}")

    def k(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.exp(-cdist(a, b, "sqeuclidean") / (2 * h * h))

    kxx, kyy, kxy = k(x, x), k(y, y), k(x, y)
    if unbiased:
        n, m = len(x), len(y)
        return float(
            (kxx.sum() - np.trace(kxx)) / (n * (n - 1))
            + (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
            - 2 * kxy.mean()
        )
    return float(max(kxx.mean() + kyy.mean() - 2 * kxy.mean(), 0.0))


# -- ranking ----------------------------------------------------------------------------
def auroc(y_true: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve (Mann–Whitney U; ties count one half)."""
    y, s = _pair(_labels(y_true, "y_true"), scores, ("y_true", "scores"))
    s = _finite(s, "scores")
    if not np.isin(y, [0, 1]).all():
        raise ValueError(f"y_true must be binary 0/1, got labels {np.unique(y)}")
    n_pos, n_neg = int(y.sum()), int((1 - y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("AUROC needs both positive and negative labels")
    ranks = stats.rankdata(s)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def average_precision(y_true: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the precision–recall curve as average precision (step-wise)."""
    y, s = _pair(_labels(y_true, "y_true"), scores, ("y_true", "scores"))
    s = _finite(s, "scores")
    if not np.isin(y, [0, 1]).all():
        raise ValueError(f"y_true must be binary 0/1, got labels {np.unique(y)}")
    if y.sum() == 0:
        raise ValueError("average precision needs at least one positive label")
    order = np.argsort(-s, kind="mergesort")
    y_sorted, s_sorted = y[order], s[order]
    # Group tied scores: precision and recall are taken at the end of each tie block.
    last = np.r_[np.flatnonzero(np.diff(s_sorted)), len(s_sorted) - 1]
    tp = np.cumsum(y_sorted)[last]
    precision = tp / (last + 1)
    recall = tp / y.sum()
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation; constant input is an error, not NaN."""
    x, y = _pair(x, y, ("x", "y"), min_len=2)
    x, y = _finite(x, "x"), _finite(y, "y")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("Spearman correlation is undefined for constant input")
    return float(stats.spearmanr(x, y).statistic)


# -- regression -----------------------------------------------------------------------
def rmse(y_true: object, y_pred: object) -> float:
    """Root mean squared error over all entries of equally shaped arrays."""
    a, b = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(
            f"y_true and y_pred must share a non-empty shape, got {a.shape} and {b.shape}"
        )
    a, b = _finite(a, "y_true"), _finite(b, "y_pred")
    return float(np.sqrt(np.mean((a - b) ** 2)))


def mape(y_true: object, y_pred: object) -> float:
    """Mean absolute percentage error, as a fraction (0.1 = 10%)."""
    a, b = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(
            f"y_true and y_pred must share a non-empty shape, got {a.shape} and {b.shape}"
        )
    a, b = _finite(a, "y_true"), _finite(b, "y_pred")
    if np.any(a == 0):
        raise ValueError("MAPE is undefined where y_true is zero")
    return float(np.mean(np.abs((a - b) / a)))


# -- over seeds ---------------------------------------------------------------------
def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0 for a single value)."""
    v = _finite(_vector(values, "values"), "values")
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def bootstrap_ci(
    values: Sequence[float],
    *,
    level: float = 0.95,
    n_boot: int = 10_000,
    rng: np.random.Generator | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval for the mean."""
    v = _finite(_vector(values, "values"), "values")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, got {n_boot}")
    rng = np.random.default_rng(0) if rng is None else rng
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def paired_win_rate(
    a: Sequence[float], b: Sequence[float], *, higher_is_better: bool = True, margin: float = 0.0
) -> float:
    """Share of paired runs in which ``a`` beats ``b``; differences within ``margin``
    count as ties, and ties count one half."""
    a, b = _pair(a, b, ("a", "b"))
    a, b = _finite(a, "a"), _finite(b, "b")
    if margin < 0:
        raise ValueError(f"margin must be non-negative, got {margin}")
    diff = (a - b) if higher_is_better else (b - a)
    return float(np.mean(np.where(diff > margin, 1.0, np.where(diff < -margin, 0.0, 0.5))))
