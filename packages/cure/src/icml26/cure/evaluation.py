"""The GCD protocol's scores and the prototype statistics of the mechanism checks.

All/Old/New accuracy on the unlabelled training samples with one Hungarian map over
all classes (``split_cluster_acc_v2`` in SimGCD; :func:`icml26.shared.metrics.
category_discovery_accuracy`). Prototype statistics map each class to its prototype by
the same Hungarian map.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from icml26.cure.data import GCDData
from icml26.shared.metrics import CategoryAccuracy, category_discovery_accuracy

__all__ = ["class_prototype_map", "gcd_accuracy", "prototype_similarity", "sibling_cosine"]


def gcd_accuracy(data: GCDData, predictions: np.ndarray) -> CategoryAccuracy:
    """All/Old/New on the unlabelled training split (one Hungarian map over All)."""
    pred = np.asarray(predictions)
    if pred.shape != (data.n,):
        raise ValueError(f"need one prediction per training sample ({data.n}), got {pred.shape}")
    u = data.unlabelled
    return category_discovery_accuracy(data.y[u], pred[u], data.old_classes)


def class_prototype_map(data: GCDData, predictions: np.ndarray, n_prototypes: int) -> np.ndarray:
    """prototype index of each class under the Hungarian map of the unlabelled split."""
    u = data.unlabelled
    size = max(data.n_classes, n_prototypes)
    counts = np.zeros((size, size), dtype=np.int64)
    np.add.at(counts, (np.asarray(predictions)[u], data.y[u]), 1)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    out = np.full(data.n_classes, -1, dtype=np.int64)
    for r, c in zip(rows, cols, strict=True):
        if c < data.n_classes and r < n_prototypes:
            out[c] = r
    return out


def prototype_similarity(
    prototypes: np.ndarray, data: GCDData, predictions: np.ndarray
) -> np.ndarray:
    """Cosine matrix of the prototypes, rows and columns ordered by class."""
    mu = np.asarray(prototypes, dtype=np.float64)
    mu = mu / np.linalg.norm(mu, axis=1, keepdims=True).clip(1e-12)
    order = class_prototype_map(data, predictions, len(mu))
    unit = np.where(order[:, None] >= 0, mu[order.clip(0)], np.nan)
    return unit @ unit.T


def sibling_cosine(similarity: np.ndarray, superclass: np.ndarray) -> float:
    """Mean cosine between prototypes of distinct classes with the same superclass."""
    sup = np.asarray(superclass)
    same = (sup[:, None] == sup[None, :]) & ~np.eye(len(sup), dtype=bool)
    vals = similarity[same]
    vals = vals[np.isfinite(vals)]
    return float(vals.mean()) if vals.size else float("nan")
